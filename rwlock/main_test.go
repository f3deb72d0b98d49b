package rwlock_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/script"
	"github.com/interlock-go/interlock/rwlock"
)

// addr is the package's shared redis-server.
var addr string

func TestMain(m *testing.M) {
	redistest.Main(m, func() (func(), error) {
		s, err := redistest.Start()
		if err != nil {
			return nil, err
		}
		addr = s.Addr()
		return s.Stop, nil
	},
		// rueidis' cluster client may still be finishing a topology
		// refresh for a moment after Close.
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"),
	)
}

// newClient returns an interlock Client on the shared server, and the
// rueidis client under it, both closed when t ends.
func newClient(t *testing.T, opts ...interlock.Option) (*interlock.Client, rueidis.Client) {
	t.Helper()
	rc := redistest.NewClient(t, addr)
	return wrap(t, rc, opts...), rc
}

func wrap(t *testing.T, rc rueidis.Client, opts ...interlock.Option) *interlock.Client {
	t.Helper()
	c, err := interlock.New(rc, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// lockName returns a key unique to the test.
func lockName(t *testing.T) string {
	return "rwlock-test:" + strings.ReplaceAll(t.Name(), "/", ":")
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// owner returns ctx acting for a new explicit owner.
func owner(ctx context.Context) context.Context {
	return interlock.WithOwner(ctx, interlock.NewOwnerID())
}

// eventually asserts that cond holds within d, polling.
func eventually(t *testing.T, d time.Duration, cond func() bool, msg string) {
	t.Helper()
	require.Eventually(t, cond, d, 5*time.Millisecond, msg)
}

// faulty wraps a rueidis client and lets a test tamper with replies, and
// counts the commands sent through Do.
type faulty struct {
	rueidis.Client
	sent atomic.Int64
	do   func(ctx context.Context, cmd rueidis.Completed, next func() rueidis.RedisResult) rueidis.RedisResult
}

func (f *faulty) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	f.sent.Add(1)
	next := func() rueidis.RedisResult { return f.Client.Do(ctx, cmd) }
	if f.do == nil {
		return next()
	}
	return f.do(ctx, cmd, next)
}

func (f *faulty) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	f.sent.Add(int64(len(cmds)))
	return f.Client.DoMulti(ctx, cmds...)
}

// runs reports whether cmd runs script.
func runs(cmd rueidis.Completed, script *script.Script) bool {
	args := cmd.Commands()
	return len(args) > 1 && args[0] == "EVALSHA" && args[1] == script.SHA1()
}

// pttl returns key's PTTL in ms.
func pttl(t *testing.T, rc rueidis.Client, key string) int64 {
	t.Helper()
	n, err := rc.Do(context.Background(), rc.B().Pttl().Key(key).Build()).AsInt64()
	require.NoError(t, err)
	return n
}

// hash returns HGETALL key.
func hash(t *testing.T, rc rueidis.Client, key string) map[string]string {
	t.Helper()
	m, err := rc.Do(context.Background(), rc.B().Hgetall().Key(key).Build()).AsStrMap()
	require.NoError(t, err)
	return m
}

// keysLike returns the keys that contain s.
func keysLike(t *testing.T, rc rueidis.Client, s string) []string {
	t.Helper()
	ks, err := rc.Do(context.Background(), rc.B().Keys().Pattern("*"+s+"*").Build()).AsStrSlice()
	require.NoError(t, err)
	return ks
}

// must fails the test on err and returns v.
func must[T any](t *testing.T) func(v T, err error) T {
	return func(v T, err error) T {
		t.Helper()
		require.NoError(t, err)
		return v
	}
}

// half is what a ReadLock and a WriteLock have in common.
type half interface {
	Lock(context.Context) error
	LockLease(context.Context, time.Duration) error
	TryLock(context.Context, time.Duration, time.Duration) (bool, error)
	Unlock(context.Context) error
	ForceUnlock(context.Context) (bool, error)
	IsLocked(context.Context) (bool, error)
	IsHeld(context.Context) (bool, error)
	HoldCount(context.Context) (int, error)
	TTL(context.Context) (time.Duration, error)
	Guard(context.Context) context.Context
}

var (
	_ half = (*rwlock.ReadLock)(nil)
	_ half = (*rwlock.WriteLock)(nil)
)
