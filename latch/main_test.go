package latch_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
)

// addr is the package's shared redis-server.
var addr string

// The package's shared cluster, started by the first test that needs one
// (see clusterAddrs) and stopped by TestMain.
var (
	clusterOnce sync.Once
	cluster     *redistest.ClusterServers
	clusterErr  error
)

func TestMain(m *testing.M) {
	redistest.Main(m, func() (func(), error) {
		s, err := redistest.Start()
		if err != nil {
			return nil, err
		}
		addr = s.Addr()
		return func() {
			cluster.Stop() // safe on nil
			s.Stop()
		}, nil
	})
}

// Tolerances: they must hold on a loaded 2-core machine running -race.
const (
	prompt = 5 * time.Second        // "happens promptly": the bound of every poll
	slack  = 700 * time.Millisecond // how late a timed event may be
	quiet  = 200 * time.Millisecond // "does not happen" observation window
)

// clusterAddrs returns the nodes of the shared 3-master cluster, starting
// it on first use; it skips (or, in CI, fails) t without redis-cli.
func clusterAddrs(t *testing.T) []string {
	t.Helper()
	clusterOnce.Do(func() { cluster, clusterErr = redistest.StartCluster() })
	redistest.SkipOrFail(t, clusterErr)
	return cluster.Addrs()
}

// target is a deployment the tests run on: the shared standalone server
// or the shared 3-master cluster.
type target struct {
	cluster bool
	addrs   []string
}

// each runs f on the standalone server, then on the cluster.
func each(t *testing.T, f func(t *testing.T, tg target)) {
	t.Run("standalone", func(t *testing.T) { f(t, target{addrs: []string{addr}}) })
	t.Run("cluster", func(t *testing.T) { f(t, target{cluster: true, addrs: clusterAddrs(t)}) })
}

// client returns an interlock Client on the target and the rueidis client
// under it, both closed when t ends.
func (tg target) client(t *testing.T, opts ...interlock.Option) (*interlock.Client, rueidis.Client) {
	t.Helper()
	rc := redistest.NewClient(t, tg.addrs...)
	c, err := interlock.New(rc, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c, rc
}

// latchName returns a name unique to the test. Every key that contains it
// is deleted when the test ends, so that -count reruns start afresh.
func latchName(t *testing.T) string {
	name := "latch-test:" + strings.ReplaceAll(t.Name(), "/", ":")
	t.Cleanup(func() {
		servers := [][]string{{addr}}
		if cluster != nil {
			servers = append(servers, cluster.Addrs())
		}
		for _, addrs := range servers {
			redistest.DeleteLike(addrs, name)
		}
	})
	return name
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// receipts returns the receipt keys of the latch called name.
func receipts(t *testing.T, rc rueidis.Client, name string) []string {
	t.Helper()
	var out []string
	for _, n := range rc.Nodes() {
		v, err := n.Do(context.Background(), n.B().Keys().Pattern("interlock_receipt:{"+redistest.Glob(name)+"}:*").Build()).AsStrSlice()
		require.NoError(t, err)
		out = append(out, v...)
	}
	return out
}

// oneReceipt asserts that what ran since the last call left at most one
// receipt of name, expiring within 30s, and deletes it.
func oneReceipt(t *testing.T, rc rueidis.Client, name, op string) {
	t.Helper()
	ks := receipts(t, rc, name)
	assert.LessOrEqual(t, len(ks), 1, "%s left receipts %q", op, ks)
	for _, k := range ks {
		ms, err := rc.Do(context.Background(), rc.B().Pttl().Key(k).Build()).AsInt64()
		require.NoError(t, err)
		assert.True(t, ms > 0 || ms == -2, "%s: receipt %s has no TTL", op, k) // -2: the Client deleted it, once answered
		assert.LessOrEqual(t, ms, int64(30000), "%s: receipt %s", op, k)
		require.NoError(t, rc.Do(context.Background(), rc.B().Del().Key(k).Build()).Error())
	}
}

func exists(t *testing.T, rc rueidis.Client, key string) bool {
	t.Helper()
	n, err := rc.Do(context.Background(), rc.B().Exists().Key(key).Build()).AsInt64()
	require.NoError(t, err)
	return n == 1
}

// do runs an arbitrary command on its first key's node.
func do(t *testing.T, rc rueidis.Client, args ...string) rueidis.RedisResult {
	t.Helper()
	res := rc.Do(context.Background(), rc.B().Arbitrary(args[0]).Keys(args[1]).Args(args[2:]...).Build())
	require.NoError(t, res.Error(), "%q", args)
	return res
}

func must[T any](t *testing.T) func(v T, err error) T {
	return func(v T, err error) T {
		t.Helper()
		require.NoError(t, err)
		return v
	}
}

func second[T any](_ T, err error) error { return err }
