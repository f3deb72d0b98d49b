package redistest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/interlock-go/interlock/internal/redisproc"
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
// both servers, the replica first. If redis-server is not on PATH, the error
// wraps ErrUnavailable.
func StartReplicated(opts ...Option) (master, replica *Server, err error) {
	o := buildOptions(opts)
	// Without this the master waits 5 s for more replicas before a full sync.
	base := []string{"--repl-diskless-sync-delay", "0"}
	master, err = startProcess(slices.Concat(base, o.args), false)
	if err != nil {
		return nil, nil, err
	}
	replicaof := []string{"--replicaof", "127.0.0.1", strconv.Itoa(master.port)}
	replica, err = startProcess(slices.Concat(base, replicaof, o.args), false)
	if err != nil {
		master.Stop()
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), replicaTimeout)
	defer cancel()
	for {
		err = checkReplication(ctx, master, replica)
		if err == nil {
			return master, replica, nil
		}
		select {
		case <-ctx.Done():
			replica.Stop()
			master.Stop()
			return nil, nil, fmt.Errorf("redistest: replica %s of %s did not sync: %w (last check: %v)",
				replica.addr, master.addr, ctx.Err(), err)
		case <-time.After(pollInterval):
		}
	}
}

// checkReplication checks once that replica is connected to master and that
// master sees it online.
func checkReplication(ctx context.Context, master, replica *Server) error {
	info, err := redisproc.CommandString(ctx, replica.addr, "INFO", "replication")
	if err != nil {
		return err
	}
	if link, _ := redisproc.InfoField(info, "master_link_status"); link != "up" {
		return fmt.Errorf("replica master_link_status is %q", link)
	}
	info, err = redisproc.CommandString(ctx, master.addr, "INFO", "replication")
	if err != nil {
		return err
	}
	// slave0:ip=127.0.0.1,port=N,state=online,offset=...,lag=...
	slave, _ := redisproc.InfoField(info, "slave0")
	want := "port=" + strconv.Itoa(replica.port) + ",state=online"
	if !strings.Contains(slave, want) {
		return fmt.Errorf("master reports slave0 %q", slave)
	}
	return nil
}
