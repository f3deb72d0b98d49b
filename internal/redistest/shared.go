package redistest

import (
	"sync"
	"testing"
)

// ShareServer returns a setup for Main that starts one standalone server
// (Start) for the whole package and stores its address in *addr, which the
// package's tests then share:
//
//	var addr string
//
//	func TestMain(m *testing.M) { redistest.Main(m, redistest.ShareServer(&addr)) }
func ShareServer(addr *string) func() (func(), error) {
	return func() (func(), error) {
		s, err := Start()
		if err != nil {
			return nil, err
		}
		*addr = s.Addr()
		return s.Stop, nil
	}
}

// The package's shared cluster, started by the first SharedCluster and
// stopped by Main once the tests have run.
var shared struct {
	mu      sync.Mutex
	started bool
	cluster *ClusterServers
	err     error
}

// SharedCluster returns the nodes of a 3-master cluster that the tests of a
// package share: the first call starts it (StartCluster), later calls
// return the same one, and Main stops it after the tests. Starting a
// cluster takes seconds; a package's tests that only need one, with unique
// key names, need not start their own. It skips (or, with CI=true, fails)
// tb as SkipOrFail does, on every call, when the cluster could not start.
// Tests that stop, pause or reshard nodes must start their own (Cluster).
func SharedCluster(tb testing.TB) []string {
	tb.Helper()
	shared.mu.Lock()
	if !shared.started {
		shared.started = true
		shared.cluster, shared.err = StartCluster()
	}
	c, err := shared.cluster, shared.err
	shared.mu.Unlock()
	SkipOrFail(tb, err)
	return c.Addrs()
}

// SharedClusterAddrs returns the nodes of the shared cluster, or nil when
// no test has started it: for clean-ups that must not start it.
func SharedClusterAddrs() []string {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.cluster == nil {
		return nil
	}
	return shared.cluster.Addrs()
}

// stopShared stops the shared cluster, if one was started.
func stopShared() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	shared.cluster.Stop() // safe on nil
	shared.cluster, shared.err, shared.started = nil, nil, false
}
