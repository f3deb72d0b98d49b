package redistest_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
)

// TestClusterReshardAndFailover builds the 3+3 cluster of the reliability
// plan (T17), moves 1,000 slots with their keys and fails one shard over,
// checking after each step that the slot map follows and no key is lost.
func TestClusterReshardAndFailover(t *testing.T) {
	t.Parallel()
	start := time.Now()
	cl := redistest.ClusterWith(t, redistest.WithReplicas(1))
	t.Logf("3+3 cluster ready in %v", time.Since(start).Round(time.Millisecond))
	ctx := t.Context()
	require.Len(t, cl.Nodes(), 6)
	masters, replicas := cl.Masters(), cl.Replicas()
	require.Equal(t, cl.Nodes()[:3], masters)
	require.Len(t, replicas, 3)
	for _, r := range replicas {
		m := cl.MasterOf(r)
		require.NotNil(t, m, "replica %s has no master", r.Addr())
		assert.Contains(t, masters, m)
	}
	for _, m := range masters {
		assert.Nil(t, cl.MasterOf(m))
	}

	// Keys in every part of the slot space, written through a routing
	// client.
	c := cl.Client(t)
	const nkeys = 3000
	key := func(i int) string { return fmt.Sprintf("k%d", i) }
	cmds := make(rueidis.Commands, 0, nkeys)
	for i := range nkeys {
		cmds = append(cmds, c.B().Set().Key(key(i)).Value(key(i)).Build())
	}
	for _, r := range c.DoMulti(ctx, cmds...) {
		require.NoError(t, r.Error())
	}
	checkKeys := func(step string) {
		t.Helper()
		cmds := make(rueidis.Commands, 0, nkeys)
		for i := range nkeys {
			cmds = append(cmds, c.B().Get().Key(key(i)).Build())
		}
		for i, r := range c.DoMulti(ctx, cmds...) {
			v, err := r.ToString()
			require.NoError(t, err, "%s: GET %s", step, key(i))
			require.Equal(t, key(i), v, "%s: GET %s", step, key(i))
		}
		// Each key is on the node NodeForKey names.
		for _, i := range []int{0, 1, 2, nkeys / 2, nkeys - 1} {
			n := cl.NodeForKey(key(i)).Client(t)
			v, err := n.Do(ctx, n.B().Get().Key(key(i)).Build()).ToString()
			require.NoError(t, err, "%s: GET %s on %s", step, key(i), cl.NodeForKey(key(i)).Addr())
			require.Equal(t, key(i), v)
		}
	}

	// Reshard 1,000 slots from the first master to the second.
	from, to := masters[0], masters[1]
	require.Same(t, from, cl.NodeForSlot(0))
	start = time.Now()
	require.NoError(t, cl.Reshard(ctx, from, to, 1000))
	t.Logf("1000 slots resharded in %v", time.Since(start).Round(time.Millisecond))
	for slot := range uint16(1000) {
		require.Same(t, to, cl.NodeForSlot(slot), "slot %d", slot)
	}
	assert.Same(t, from, cl.NodeForSlot(1000))
	moved := 0
	for i := range nkeys {
		if keys.Slot(key(i)) < 1000 {
			moved++
			require.Same(t, to, cl.NodeForKey(key(i)))
		}
	}
	require.NotZero(t, moved, "some keys were in the moved slots")
	checkKeys("after reshard")

	// Fail the second master over to its replica.
	var replica *redistest.Server
	for _, r := range replicas {
		if cl.MasterOf(r) == to {
			replica = r
		}
	}
	require.NotNil(t, replica)
	start = time.Now()
	require.NoError(t, cl.Failover(ctx, replica))
	t.Logf("failover agreed by every node in %v", time.Since(start).Round(time.Millisecond))
	assert.Same(t, replica, cl.NodeForSlot(0))
	assert.Same(t, replica, cl.MasterOf(to), "the old master replicates the new one")
	assert.Nil(t, cl.MasterOf(replica))
	assert.True(t, slices.Contains(cl.Masters(), replica))
	assert.True(t, slices.Contains(cl.Replicas(), to))
	checkKeys("after failover")
}

func TestClusterBadInput(t *testing.T) {
	t.Parallel()
	_, err := redistest.StartCluster(redistest.WithReplicas(-1))
	assert.ErrorContains(t, err, "negative number of replicas")

	cl := redistest.Cluster(t)
	ctx := t.Context()
	ms := cl.Masters()
	require.Len(t, ms, 3)
	assert.Empty(t, cl.Replicas())
	assert.ErrorContains(t, cl.Failover(ctx, ms[0]), "is a master, not a replica")
	assert.ErrorContains(t, cl.Failover(ctx, nil), "<nil> is not a node")
	assert.ErrorContains(t, cl.Reshard(ctx, ms[0], ms[0], 1), "both")
	assert.ErrorContains(t, cl.Reshard(ctx, ms[0], ms[1], 0), "cannot move 0 of the 5461 slots")
	assert.ErrorContains(t, cl.Reshard(ctx, ms[0], ms[1], 5461), "cannot move 5461")

	// A small reshard without replicas, of a slot with more keys than one
	// MIGRATE takes; Refresh agrees with it.
	tag := ""
	for i := 0; tag == ""; i++ {
		if s := fmt.Sprintf("{t%d}", i); keys.Slot(s) == 10925 {
			tag = s
		}
	}
	const nkeys = 250
	c := cl.Client(t)
	for i := range nkeys {
		require.NoError(t, c.Do(ctx, c.B().Set().Key(fmt.Sprintf("%s:%d", tag, i)).Value("v").Build()).Error())
	}
	require.NoError(t, cl.Reshard(ctx, ms[2], ms[0], 10))
	require.NoError(t, cl.Refresh(ctx))
	assert.Same(t, ms[0], cl.NodeForSlot(10923))
	assert.Same(t, ms[0], cl.NodeForSlot(10932))
	assert.Same(t, ms[2], cl.NodeForSlot(10933))
	for n, want := range map[*redistest.Server]int64{ms[0]: nkeys, ms[2]: 0} {
		nc := n.Client(t)
		got, err := nc.Do(ctx, nc.B().ClusterCountkeysinslot().Slot(10925).Build()).AsInt64()
		require.NoError(t, err)
		assert.Equal(t, want, got, "keys of slot 10925 on %s", n.Addr())
	}
}
