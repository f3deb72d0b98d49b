package compat_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
)

// standaloneAddr is the package's shared standalone redis-server.
var standaloneAddr string

// The shared cluster is started by the first test that needs it, so that
// running only standalone tests does not pay for it.
var shared struct {
	sync.Mutex
	started bool
	cluster *redistest.ClusterServers
	err     error
}

func TestMain(m *testing.M) {
	// A worker process (see workers_test.go) runs its part and exits
	// before any server is started or any test runs.
	if mode := os.Getenv(envWorker); mode != "" {
		os.Exit(runWorker(mode))
	}
	redistest.Main(m, func() (func(), error) {
		s, err := redistest.Start()
		if err != nil {
			return nil, err
		}
		standaloneAddr = s.Addr()
		return func() {
			shared.Lock()
			shared.cluster.Stop()
			shared.Unlock()
			s.Stop()
		}, nil
	},
		// rueidis' cluster client may still be finishing a topology
		// refresh for a moment after Close.
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"),
	)
}

// sharedCluster returns the package's three-master cluster, starting it on
// first use. It skips or fails t as redistest.SkipOrFail does when the
// cluster cannot be started.
func sharedCluster(t *testing.T) *redistest.ClusterServers {
	t.Helper()
	shared.Lock()
	defer shared.Unlock()
	if !shared.started {
		shared.started = true
		shared.cluster, shared.err = redistest.StartCluster()
	}
	redistest.SkipOrFail(t, shared.err)
	return shared.cluster
}

var nameSeq atomic.Int64

// unique returns base made unique to this process and call, so that tests
// never share keys, even on a server left over from an earlier run.
func unique(base string) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%d-%s", base, os.Getpid(), nameSeq.Add(1), hex.EncodeToString(b[:]))
}

// testCtx returns a context that ends after d or when t ends.
func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// newLockClient returns an interlock Client on rc, closed by t.Cleanup
// (before rc, which was registered earlier).
func newLockClient(t *testing.T, rc rueidis.Client, opts ...interlock.Option) *interlock.Client {
	t.Helper()
	c, err := interlock.New(rc, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}
