package redistest

import (
	"testing"
	"time"
)

const (
	// replicaTimeout bounds the first synchronisation of a replica.
	replicaTimeout = 10 * time.Second
	// pollInterval is the pause between two checks of the replication.
	pollInterval = 10 * time.Millisecond
)

// Replicated starts a master and one replica of it for the test tb and stops
// both with tb.Cleanup (the replica first); extraArgs are appended to both
// command lines. It returns once the replica reports master_link_status:up and
// the master lists it as online, so WAIT works at once. It skips or fails tb as
// SkipOrFail does when redis-server is missing. REDIS_ADDR is ignored.
func Replicated(tb testing.TB, extraArgs ...string) (master, replica *Server) {
	tb.Helper()
	master, replica, err := StartReplicated(WithArgs(extraArgs...))
	SkipOrFail(tb, err)
	tb.Cleanup(func() {
		replica.cleanup(tb)
		master.cleanup(tb)
	})
	return master, replica
}

// StartReplicated is Replicated without a testing.TB: the caller must Stop
// both servers, the replica first. It is StartReplicas(1, opts...). If
// redis-server is not on PATH, the error wraps ErrUnavailable.
func StartReplicated(opts ...Option) (master, replica *Server, err error) {
	r, err := StartReplicas(1, opts...)
	if err != nil {
		return nil, nil, err
	}
	return r.master, r.replicas[0], nil
}
