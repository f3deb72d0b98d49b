package redistest_test

import (
	"regexp"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/redistest"
)

func TestSentinel(t *testing.T) {
	t.Parallel()
	start := time.Now()
	s := redistest.Sentinel(t)
	t.Logf("master, replica and sentinel ready in %v", time.Since(start).Round(time.Millisecond))
	assert.Equal(t, "mymaster", s.MasterSet())
	addrs := s.SentinelAddrs()
	require.Len(t, addrs, 1)
	assert.Regexp(t, regexp.MustCompile(`^127\.0\.0\.1:\d+$`), addrs[0])
	assert.NotEqual(t, s.Master().Addr(), s.Replica().Addr())

	ctx := t.Context()
	c := s.Client(t)
	assert.Equal(t, rueidis.ClientModeSentinel, c.Mode())
	require.NoError(t, c.Do(ctx, c.B().Set().Key("k").Value("v").Build()).Error())
	role, err := c.Do(ctx, c.B().Role().Build()).ToArray()
	require.NoError(t, err)
	kind, err := role[0].ToString()
	require.NoError(t, err)
	assert.Equal(t, "master", kind, "the sentinel client talks to the master")

	// The write went to the master and on to the replica.
	mc := s.Master().Client(t)
	v, err := mc.Do(ctx, mc.B().Get().Key("k").Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "v", v)
	acked, err := mc.Do(ctx, mc.B().Wait().Numreplicas(1).Timeout(5000).Build()).AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(1), acked)
	// Once, on a Valkey 8.1.1 container right after the replica's first
	// sync, the replica answered nil just after WAIT had counted it: the
	// write must arrive, within a deadline rather than at once.
	rc := s.Replica().Client(t)
	redistest.Eventually(t, 10*time.Second, func() bool {
		v, err := rc.Do(ctx, rc.B().Get().Key("k").Build()).ToString()
		return err == nil && v == "v"
	}, "the write reaches the replica")

	// Stop stops every server, and may be repeated.
	ids := runIDs(t, addrs[0], s.Master().Addr(), s.Replica().Addr())
	c.Close()
	s.Stop()
	s.Stop()
	stoppedAll(t, ids)
}

// TestSentinelUnavailable cannot run in parallel: it empties PATH. It
// tests the process backend, whatever EnvImage says.
func TestSentinelUnavailable(t *testing.T) {
	t.Setenv(redistest.EnvAddr, "")
	t.Setenv(redistest.EnvImage, "")
	t.Setenv("PATH", t.TempDir())
	_, err := redistest.StartSentinel()
	assert.ErrorIs(t, err, redistest.ErrUnavailable)
	t.Setenv("CI", "")
	assert.True(t, skipped(t, func(t *testing.T) { redistest.Sentinel(t) }))
}
