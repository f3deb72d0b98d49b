package semaphore_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
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

// clusterAddrs returns the nodes of the shared 3-master cluster, starting
// it on first use; it skips (or, in CI, fails) t without redis-cli.
func clusterAddrs(t *testing.T) []string {
	t.Helper()
	clusterOnce.Do(func() { cluster, clusterErr = redistest.StartCluster() })
	redistest.SkipOrFail(t, clusterErr)
	return cluster.Addrs()
}

// newClient returns an interlock Client on the shared server, and the
// rueidis client under it, both closed when t ends.
func newClient(t *testing.T, opts ...interlock.Option) (*interlock.Client, rueidis.Client) {
	t.Helper()
	rc := redistest.NewClient(t, addr)
	return wrap(t, rc, opts...), rc
}

// wrap returns an interlock Client on rc, closed when t ends.
func wrap(t *testing.T, rc rueidis.Client, opts ...interlock.Option) *interlock.Client {
	t.Helper()
	c, err := interlock.New(rc, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// semName returns a key unique to the test. Every key that contains it
// is deleted when the test ends, so that -count reruns start afresh.
func semName(t *testing.T) string {
	name := "sem-test:" + strings.ReplaceAll(t.Name(), "/", ":")
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
