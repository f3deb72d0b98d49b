package redistest_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/redistest"
)

// TestSentinelFailover freezes the master of three sentinels, sees the
// replica promoted, and sees the old master demoted once it continues:
// the split-brain window of the reliability plan (T8).
func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	start := time.Now()
	g := redistest.Sentinels(t, 3)
	t.Logf("master, replica and 3 sentinels ready in %v", time.Since(start).Round(time.Millisecond))
	require.Len(t, g.SentinelAddrs(), 3)
	require.Len(t, g.SentinelServers(), 3)
	assert.Equal(t, 2, g.Quorum())
	assert.Equal(t, "mymaster", g.MasterSet())
	servers := g.Servers()
	require.Len(t, servers, 2)
	old := g.Master()
	require.Same(t, servers[0], old)
	require.Equal(t, []*redistest.Server{servers[1]}, g.Replicas())

	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
	defer cancel()
	c := g.Client(t)
	require.Equal(t, rueidis.ClientModeSentinel, c.Mode())
	require.NoError(t, c.Do(ctx, c.B().Set().Key("k").Value("v").Build()).Error())

	require.NoError(t, old.Pause())
	t.Cleanup(func() { _ = old.Resume() })
	paused := time.Now()
	promoted, err := g.WaitFailover(ctx)
	require.NoError(t, err)
	t.Logf("replica promoted %v after the master was paused", time.Since(paused).Round(time.Millisecond))
	assert.Same(t, servers[1], promoted)
	assert.Same(t, promoted, g.Master())
	assert.Equal(t, []*redistest.Server{old}, g.Replicas())

	// The old master continues and claims to be a master for a while (the
	// split-brain window) until the sentinels demote it.
	require.NoError(t, old.Resume())
	resumed := time.Now()
	oc := old.Client(t)
	role, err := oc.Do(ctx, oc.B().Role().Build()).ToArray()
	require.NoError(t, err)
	kind, err := role[0].ToString()
	require.NoError(t, err)
	t.Logf("right after SIGCONT the old master reports role %q", kind)
	require.NoError(t, g.WaitReplicaOfMaster(ctx, old))
	t.Logf("old master demoted %v after SIGCONT", time.Since(resumed).Round(time.Millisecond))

	// The sentinel client follows the failover.
	require.Eventually(t, func() bool {
		return c.Do(ctx, c.B().Set().Key("k2").Value("v").Build()).Error() == nil
	}, 10*time.Second, 50*time.Millisecond)
	pc := promoted.Client(t)
	v, err := pc.Do(ctx, pc.B().Get().Key("k2").Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "v", v, "the sentinel client writes to the promoted master")

	ids := runIDs(t, append(g.SentinelAddrs(), old.Addr(), promoted.Addr())...)
	c.Close()
	g.Stop()
	g.Stop()
	stoppedAll(t, ids)
}

func TestSentinelsBadInput(t *testing.T) {
	t.Parallel()
	_, err := redistest.StartSentinels(0)
	assert.ErrorContains(t, err, "at least one sentinel")
	_, err = redistest.StartSentinels(3, redistest.WithReplicas(0))
	assert.ErrorContains(t, err, "one replica")

	// One sentinel and two replicas, and a failover that never comes.
	g := redistest.Sentinels(t, 1, redistest.WithReplicas(2))
	assert.Equal(t, 1, g.Quorum())
	assert.Len(t, g.Replicas(), 2)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err = g.WaitFailover(ctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, "did not replace master")
}
