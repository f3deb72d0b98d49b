package redistest_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/redistest"
)

// TestReplicaSet plays the deterministic replication loss of the
// reliability plan (T9, T26): with one of two replicas paused, a write is
// acknowledged by one replica only; the master dies; the paused replica is
// promoted and lacks the write.
func TestReplicaSet(t *testing.T) {
	t.Parallel()
	start := time.Now()
	r := redistest.Replicas(t, 2)
	t.Logf("master and 2 replicas synced in %v", time.Since(start).Round(time.Millisecond))
	ctx := t.Context()
	replicas := r.Replicas()
	require.Len(t, replicas, 2)
	mc := r.Master().Client(t)

	// WAIT works at once.
	require.Equal(t, int64(2), setAndWait(t, mc, "k1", 2, 5000))

	// A paused replica is cut off: the master counts one replica, which
	// acknowledges the next write.
	require.NoError(t, r.PauseReplication(1))
	t.Cleanup(func() { _ = r.ResumeReplication(1) })
	require.Equal(t, int64(1), setAndWait(t, mc, "k2", 1, 5000))
	info, err := mc.Do(ctx, mc.B().Info().Section("replication").Build()).ToString()
	require.NoError(t, err)
	assert.Contains(t, info, "connected_slaves:1\r\n")

	// The master dies; the paused replica wakes up and is promoted.
	require.NoError(t, r.Master().Kill())
	require.NoError(t, r.ResumeReplication(1))
	start = time.Now()
	require.NoError(t, r.Promote(ctx, 1))
	t.Logf("replica promoted in %v", time.Since(start).Round(time.Millisecond))
	pc := replicas[1].Client(t)
	role, err := pc.Do(ctx, pc.B().Role().Build()).ToArray()
	require.NoError(t, err)
	kind, err := role[0].ToString()
	require.NoError(t, err)
	assert.Equal(t, "master", kind)
	v, err := pc.Do(ctx, pc.B().Get().Key("k1").Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "v", v, "the promoted replica has the write both replicas acknowledged")
	err = pc.Do(ctx, pc.B().Get().Key("k2").Build()).Error()
	assert.True(t, rueidis.IsRedisNil(err), "the promoted replica lost the write it never saw: %v", err)
	require.NoError(t, pc.Do(ctx, pc.B().Set().Key("k3").Value("v").Build()).Error(), "the promoted replica accepts writes")
	rc := replicas[0].Client(t)
	v, err = rc.Do(ctx, rc.B().Get().Key("k2").Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "v", v, "the replica that acknowledged the write has it")

	// Stop closes every port and may be repeated.
	r.Stop()
	r.Stop()
	for _, s := range append(replicas, r.Master()) {
		_, err := net.DialTimeout("tcp", s.Addr(), time.Second)
		assert.Error(t, err, "%s still accepts connections after Stop", s.Addr())
	}
}

// setAndWait sets key and runs WAIT replicas timeoutMs on the same
// connection, and returns WAIT's answer. (WAIT counts acknowledgements of
// its own connection's writes, and rueidis sends a lone blocking command
// such as WAIT on a pooled connection of its own.)
func setAndWait(t *testing.T, c rueidis.Client, key string, replicas, timeoutMs int64) int64 {
	t.Helper()
	var acked int64
	err := c.Dedicated(func(d rueidis.DedicatedClient) error {
		res := d.DoMulti(t.Context(),
			d.B().Set().Key(key).Value("v").Build(),
			d.B().Wait().Numreplicas(replicas).Timeout(timeoutMs).Build())
		if err := res[0].Error(); err != nil {
			return err
		}
		var err error
		acked, err = res[1].AsInt64()
		return err
	})
	require.NoError(t, err)
	return acked
}

func TestReplicaSetBadInput(t *testing.T) {
	t.Parallel()
	_, err := redistest.StartReplicas(0)
	assert.ErrorContains(t, err, "at least one replica")
	r := redistest.Replicas(t, 1)
	assert.ErrorContains(t, r.PauseReplication(1), "no replica 1 (have 0 to 0)")
	assert.ErrorContains(t, r.ResumeReplication(-1), "no replica -1")
	assert.ErrorContains(t, r.Promote(t.Context(), 2), "no replica 2")

	// A wait that cannot succeed ends with its context and says why.
	require.NoError(t, r.PauseReplication(0))
	t.Cleanup(func() { _ = r.ResumeReplication(0) })
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	err = r.WaitSynced(ctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, "did not sync")
	require.NoError(t, r.ResumeReplication(0))
	require.NoError(t, r.WaitSynced(t.Context()))
}

func TestRestartAfter(t *testing.T) {
	t.Parallel()
	redistest.RequireProcess(t)
	srv := redistest.Standalone(t)
	addr := srv.Addr()
	ctx := t.Context()
	c := srv.Client(t)
	require.NoError(t, c.Do(ctx, c.B().Set().Key("k").Value("v").Build()).Error())

	const down = 300 * time.Millisecond
	start := time.Now()
	require.NoError(t, srv.RestartAfter(ctx, down))
	took := time.Since(start)
	t.Logf("RestartAfter(%v) took %v", down, took.Round(time.Millisecond))
	assert.GreaterOrEqual(t, took, down)
	assert.Equal(t, addr, srv.Addr(), "same port")
	n, err := c.Do(ctx, c.B().Dbsize().Build()).AsInt64()
	require.NoError(t, err, "the old client reconnects to the same address")
	assert.Zero(t, n, "nothing is persisted")

	// A context that ends during the downtime leaves the server down.
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, srv.RestartAfter(cctx, time.Minute), context.DeadlineExceeded)
	_, err = net.DialTimeout("tcp", addr, time.Second)
	assert.Error(t, err)
	require.NoError(t, srv.Restart(ctx))

	assert.ErrorContains(t, srv.RestartAfter(ctx, -time.Second), "negative downtime")
}

func TestRestartWithAOF(t *testing.T) {
	t.Parallel()
	redistest.RequireProcess(t)
	srv, err := redistest.Start(redistest.WithAOF())
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	ctx := t.Context()
	c := srv.Client(t)
	// Pinned: rueidis resends a read across the restart and would recycle
	// it while the dead connection's writer still reads it.
	require.NoError(t, c.Do(ctx, c.B().Set().Key("k").Value("v").Build().Pin()).Error())
	require.NoError(t, srv.RestartAfter(ctx, 0))
	v, err := c.Do(ctx, c.B().Get().Key("k").Build().Pin()).ToString()
	require.NoError(t, err, "the append-only file survives a kill")
	assert.Equal(t, "v", v)
}
