package redistest

import "testing"

// ClusterNodeContainer starts a cluster-enabled server from img that belongs
// to no cluster and owns no slot, for the test tb, and stops it with
// tb.Cleanup; extraArgs are appended to its command line.
// TestServerDifferences probes the commands of cluster mode on it without
// building a cluster.
func ClusterNodeContainer(tb testing.TB, img Image, extraArgs ...string) *Server {
	tb.Helper()
	SkipOrFail(tb, dockerReady())
	s, err := startContainer(img, extraArgs, true)
	SkipOrFail(tb, err)
	tb.Cleanup(func() { s.cleanup(tb) })
	return s
}
