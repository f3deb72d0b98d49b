package redistest_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
)

// shared is started once by TestMain, as packages sharing a server do.
var shared *redistest.Server

func TestMain(m *testing.M) {
	redistest.Main(m, func() (func(), error) {
		var err error
		shared, err = redistest.Start()
		if err != nil {
			return nil, err
		}
		return shared.Stop, nil
	})
}

func TestSharedServer(t *testing.T) {
	t.Parallel()
	c := shared.Client(t)
	pong, err := c.Do(t.Context(), c.B().Ping().Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "PONG", pong)
}

func TestStandaloneProcessControl(t *testing.T) {
	t.Parallel()
	redistest.RequireProcess(t)
	srv := redistest.Standalone(t)
	addr := srv.Addr()
	require.Regexp(t, regexp.MustCompile(`^127\.0\.0\.1:\d+$`), addr)
	ctx := t.Context()
	c := srv.Client(t)
	// Commands are pinned: rueidis recycles one after its reply even when a
	// broken connection's writer read it before a retry (Kill, Restart),
	// which the race detector reports against the next command built.
	require.NoError(t, c.Do(ctx, c.B().Set().Key("k").Value("v").Build().Pin()).Error())

	// Pause: connections stay open but nothing answers until Resume.
	require.NoError(t, srv.Pause())
	t.Cleanup(func() { _ = srv.Resume() })
	pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err := c.Do(pctx, c.B().Get().Key("k").Build().Pin()).Error()
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, srv.Resume())
	v, err := c.Do(ctx, c.B().Get().Key("k").Build().Pin()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "v", v)

	// Kill: the port is closed.
	require.NoError(t, srv.Kill())
	require.NoError(t, srv.Kill(), "killing a dead server does nothing")
	_, err = net.DialTimeout("tcp", addr, time.Second)
	require.Error(t, err)
	require.Error(t, srv.Pause(), "a killed server cannot be paused")

	// Restart: same port, empty data set; the old client reconnects.
	require.NoError(t, srv.Restart(ctx))
	assert.Equal(t, addr, srv.Addr())
	n, err := c.Do(ctx, c.B().Dbsize().Build().Pin()).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, n)
	err = c.Do(ctx, c.B().Get().Key("k").Build().Pin()).Error()
	assert.True(t, rueidis.IsRedisNil(err), "GET after restart: %v", err)

	// Restart of a running server kills it first.
	require.NoError(t, c.Do(ctx, c.B().Set().Key("k").Value("v").Build().Pin()).Error())
	require.NoError(t, srv.Restart(ctx))
	err = c.Do(ctx, c.B().Get().Key("k").Build().Pin()).Error()
	assert.True(t, rueidis.IsRedisNil(err), "GET after restart: %v", err)

	// Stop is final.
	srv.Stop()
	srv.Stop()
	_, err = net.DialTimeout("tcp", addr, time.Second)
	require.Error(t, err)
	require.Error(t, srv.Restart(ctx))
}

func TestStopPausedServer(t *testing.T) {
	t.Parallel()
	redistest.RequireProcess(t)
	srv, err := redistest.Start()
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	require.NoError(t, srv.Pause())
	start := time.Now()
	srv.Stop()
	assert.Less(t, time.Since(start), time.Second, "Stop must wake a paused server")
	_, err = net.DialTimeout("tcp", srv.Addr(), time.Second)
	require.Error(t, err)
	assert.Error(t, srv.Resume(), "a stopped server cannot be resumed")
}

func TestRestartWaitsForBusyPort(t *testing.T) {
	t.Parallel()
	redistest.RequireProcess(t)
	srv := redistest.Standalone(t)
	require.NoError(t, srv.Kill())
	l, err := net.Listen("tcp", srv.Addr())
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	err = srv.Restart(ctx)
	cancel()
	require.ErrorContains(t, err, "address already in use")

	time.AfterFunc(200*time.Millisecond, func() { l.Close() })
	require.NoError(t, srv.Restart(t.Context()))
	c := srv.Client(t)
	require.NoError(t, c.Do(t.Context(), c.B().Ping().Build()).Error())
}

func TestStartupFailureReportsLog(t *testing.T) {
	t.Parallel()
	redistest.RequireProcess(t)
	start := time.Now()
	_, err := redistest.Start(redistest.WithArgs("--no-such-directive", "x"))
	require.Error(t, err)
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.ErrorContains(t, err, "FATAL CONFIG FILE ERROR")
	// The temporary directory named in the message is gone.
	m := regexp.MustCompile(`last lines of (\S+):`).FindStringSubmatch(err.Error())
	require.Len(t, m, 2, "error without log tail: %v", err)
	_, statErr := os.Stat(filepath.Dir(m[1]))
	assert.ErrorIs(t, statErr, os.ErrNotExist)
}

func TestCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.Cluster(t)
	require.Len(t, cl.Nodes(), 3)
	require.Len(t, cl.Addrs(), 3)
	ctx := t.Context()
	c := cl.Client(t)

	owners := map[string]bool{}
	for _, key := range []string{"myLock", "myFair", "myRW", "myFenced", "{order}:42", "a{b", "x{}y"} {
		slot, err := c.Do(ctx, c.B().ClusterKeyslot().Key(key).Build()).AsInt64()
		require.NoError(t, err)
		assert.Equal(t, int64(keys.Slot(key)), slot, "CLUSTER KEYSLOT %q", key)

		require.NoError(t, c.Do(ctx, c.B().Set().Key(key).Value("v-"+key).Build()).Error())
		v, err := c.Do(ctx, c.B().Get().Key(key).Build()).ToString()
		require.NoError(t, err)
		assert.Equal(t, "v-"+key, v)

		owner := cl.NodeForKey(key)
		assert.Same(t, owner, cl.NodeForSlot(keys.Slot(key)))
		owners[owner.Addr()] = true
		for _, n := range cl.Nodes() {
			nc := n.Client(t)
			err := nc.Do(ctx, nc.B().Get().Key(key).Build()).Error()
			if n == owner {
				assert.NoError(t, err, "GET %q on its owner", key)
				continue
			}
			ret, ok := rueidis.IsRedisErr(err)
			require.True(t, ok, "GET %q on %s: %v", key, n.Addr(), err)
			movedTo, moved := ret.IsMoved()
			assert.True(t, moved, "GET %q on %s: %v", key, n.Addr(), err)
			assert.Equal(t, owner.Addr(), movedTo)
		}
	}
	assert.Len(t, owners, 3, "the keys span all three masters")
}

func TestReplicated(t *testing.T) {
	t.Parallel()
	master, replica := redistest.Replicated(t)
	ctx := t.Context()
	mc, rc := master.Client(t), replica.Client(t)
	require.NoError(t, mc.Do(ctx, mc.B().Set().Key("k").Value("v").Build()).Error())
	acked, err := mc.Do(ctx, mc.B().Wait().Numreplicas(1).Timeout(5000).Build()).AsInt64()
	require.NoError(t, err)
	require.Equal(t, int64(1), acked)
	v, err := rc.Do(ctx, rc.B().Get().Key("k").Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "v", v)
	err = rc.Do(ctx, rc.B().Set().Key("k").Value("w").Build()).Error()
	assert.ErrorContains(t, err, "READONLY")
}

// TestExternal cannot run in parallel: it sets REDIS_ADDR.
func TestExternal(t *testing.T) {
	redistest.RequireProcess(t)
	srv := redistest.Standalone(t)
	t.Setenv(redistest.EnvAddr, srv.Addr())

	ext := redistest.Standalone(t)
	assert.Equal(t, srv.Addr(), ext.Addr())
	assert.ErrorIs(t, ext.Kill(), redistest.ErrExternal)
	assert.ErrorIs(t, ext.Pause(), redistest.ErrExternal)
	assert.ErrorIs(t, ext.Resume(), redistest.ErrExternal)
	assert.ErrorIs(t, ext.Restart(t.Context()), redistest.ErrExternal)
	ext.Stop()
	c := ext.Client(t)
	require.NoError(t, c.Do(t.Context(), c.B().Ping().Build()).Error(), "Stop must leave an external server alone")

	_, err := redistest.Start(redistest.WithArgs("--maxmemory", "1mb"))
	assert.ErrorIs(t, err, redistest.ErrExternal)
	assert.True(t, skipped(t, func(t *testing.T) { redistest.RequireProcess(t) }))
	assert.True(t, skipped(t, func(t *testing.T) { redistest.Standalone(t, "--maxmemory", "1mb") }))

	t.Setenv(redistest.EnvAddr, "127.0.0.1:1")
	_, err = redistest.Start()
	assert.ErrorContains(t, err, "does not answer PING")
	assert.NotErrorIs(t, err, redistest.ErrUnavailable)
}

// skipped runs f as a subtest and reports whether it skipped.
func skipped(t *testing.T, f func(t *testing.T)) bool {
	var s bool
	t.Run("sub", func(t *testing.T) {
		defer func() { s = t.Skipped() }()
		f(t)
	})
	return s
}

// TestUnavailable cannot run in parallel: it empties PATH.
func TestUnavailable(t *testing.T) {
	t.Setenv(redistest.EnvAddr, "")
	t.Setenv("PATH", t.TempDir())

	_, err := redistest.Start()
	assert.ErrorIs(t, err, redistest.ErrUnavailable)
	assert.ErrorContains(t, err, "redis-server not found on PATH; install redis-server or set REDIS_ADDR")
	_, err = redistest.StartCluster()
	assert.ErrorIs(t, err, redistest.ErrUnavailable)
	_, _, err = redistest.StartReplicated()
	assert.ErrorIs(t, err, redistest.ErrUnavailable)

	t.Setenv("CI", "")
	assert.True(t, skipped(t, func(t *testing.T) { redistest.Standalone(t) }))
	assert.True(t, skipped(t, func(t *testing.T) { redistest.Cluster(t) }))
	assert.True(t, skipped(t, func(t *testing.T) { redistest.RequireProcess(t) }))
}

// fakeTB records Skip and Fatal instead of ending the test.
type fakeTB struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (f *fakeTB) Helper()               {}
func (f *fakeTB) Skip(args ...any)      { f.skipped, f.msg = true, fmt.Sprint(args...) }
func (f *fakeTB) Fatal(args ...any)     { f.failed, f.msg = true, fmt.Sprint(args...) }
func (f *fakeTB) Skipf(string, ...any)  { panic("unexpected Skipf") }
func (f *fakeTB) Fatalf(string, ...any) { panic("unexpected Fatalf") }

// TestSkipOrFail cannot run in parallel: it sets CI.
func TestSkipOrFail(t *testing.T) {
	unavailable := fmt.Errorf("%w: redis-server not found", redistest.ErrUnavailable)
	external := fmt.Errorf("%w: cannot kill", redistest.ErrExternal)
	other := errors.New("boom")
	for _, tc := range []struct {
		ci         string
		err        error
		skip, fail bool
	}{
		{"", nil, false, false},
		{"", unavailable, true, false},
		{"", external, true, false},
		{"", other, false, true},
		{"true", nil, false, false},
		{"true", unavailable, false, true},
		{"true", external, true, false},
		{"true", other, false, true},
		{"false", unavailable, true, false},
	} {
		t.Setenv("CI", tc.ci)
		f := &fakeTB{TB: t}
		redistest.SkipOrFail(f, tc.err)
		assert.Equal(t, tc.skip, f.skipped, "CI=%q err=%v skip", tc.ci, tc.err)
		assert.Equal(t, tc.fail, f.failed, "CI=%q err=%v fail", tc.ci, tc.err)
		if tc.err != nil {
			assert.Equal(t, tc.err.Error(), f.msg)
		}
	}
}
