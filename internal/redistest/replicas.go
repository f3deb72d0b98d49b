package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/interlock-go/interlock/internal/redisproc"
)

// WithReplicas sets how many replicas each master gets: for StartCluster
// (and Cluster) the replicas per master, 0 by default; for StartSentinels
// (and Sentinels) the replicas of the monitored master, 1 by default. A
// negative n makes those constructors return an error. StartReplicas takes
// its count as an argument and ignores this option.
func WithReplicas(n int) Option {
	return func(o *options) { o.replicas, o.replicasSet = n, true }
}

// replicaArgs are the arguments of every server in a replication setup.
// Without them a master waits 5 s for more replicas before a full sync.
var replicaArgs = []string{"--repl-diskless-sync-delay", "0"}

// A ReplicaSet is a master and n replicas of it, each a redis-server
// process started by this package. Its methods are safe for concurrent use.
//
// Restarting a server keeps its role: a restarted replica syncs again from
// the master; a restarted master comes back empty (unless WithAOF) and its
// replicas, on reconnecting, replace their data set with that empty one.
type ReplicaSet struct {
	master   *Server
	replicas []*Server
}

// Replicas starts a master and n replicas of it for the test tb and stops
// them with tb.Cleanup (replicas first); see StartReplicas. It skips or
// fails tb as SkipOrFail does when redis-server is missing. REDIS_ADDR is
// ignored.
func Replicas(tb testing.TB, n int, opts ...Option) *ReplicaSet {
	tb.Helper()
	r, err := StartReplicas(n, opts...)
	SkipOrFail(tb, err)
	tb.Cleanup(func() { r.cleanup(tb) })
	return r
}

// StartReplicas starts a master and n ≥ 1 replicas of it and returns once
// every replica reports master_link_status:up and WAIT n on the master
// returns n, so that WAIT works at once. The caller must call Stop. If
// redis-server is not on PATH, the error wraps ErrUnavailable.
func StartReplicas(n int, opts ...Option) (*ReplicaSet, error) {
	if n < 1 {
		return nil, fmt.Errorf("redistest: StartReplicas needs at least one replica, not %d", n)
	}
	if img, ok, err := envImage(); ok {
		if err != nil {
			return nil, err
		}
		r, err := StartContainerReplicas(img, n, opts...)
		if err == nil {
			announce("master", r.master)
		}
		return r, err
	}
	o := buildOptions(opts)
	master, err := startProcess(slices.Concat(replicaArgs, o.args), false)
	if err != nil {
		return nil, err
	}
	r := &ReplicaSet{master: master}
	replicaof := []string{"--replicaof", "127.0.0.1", strconv.Itoa(master.port)}
	for range n {
		replica, err := startProcess(slices.Concat(replicaArgs, replicaof, o.args), false)
		if err != nil {
			r.Stop()
			return nil, err
		}
		r.replicas = append(r.replicas, replica)
	}
	ctx, cancel := context.WithTimeout(context.Background(), replicaTimeout)
	defer cancel()
	if err := r.WaitSynced(ctx); err != nil {
		err = fmt.Errorf("redistest: %w%s", err, logTails(r.all()...))
		r.Stop()
		return nil, err
	}
	return r, nil
}

// all returns the master and then the replicas.
func (r *ReplicaSet) all() []*Server {
	return append([]*Server{r.master}, r.replicas...)
}

// Master returns the server started as the master. It stays the same after
// Promote.
func (r *ReplicaSet) Master() *Server { return r.master }

// Replicas returns the servers started as replicas, in a new slice; index i
// is replica i of the other methods.
func (r *ReplicaSet) Replicas() []*Server { return slices.Clone(r.replicas) }

// replica returns replica i, or an error naming the valid range.
func (r *ReplicaSet) replica(op string, i int) (*Server, error) {
	if i < 0 || i >= len(r.replicas) {
		return nil, fmt.Errorf("redistest: %s: no replica %d (have 0 to %d)", op, i, len(r.replicas)-1)
	}
	return r.replicas[i], nil
}

// PauseReplication cuts replica i off its master: it freezes the replica
// with SIGSTOP and then has the master close its replication connection,
// so that no write the master accepts afterwards reaches the replica, not
// even into its socket buffer (a SIGSTOP alone would let the kernel take
// them in, for the replica to apply when it continues). The master keeps
// accepting writes, and WAIT counts the replica no longer. The replica
// answers no client until ResumeReplication. Stop wakes it up.
func (r *ReplicaSet) PauseReplication(i int) error {
	s, err := r.replica("PauseReplication", i)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), redisproc.ProbeTimeout)
	defer cancel()
	// Find the replication connection before the replica stops answering.
	info, err := redisproc.CommandString(ctx, s.addr, "INFO", "replication")
	if err != nil {
		return fmt.Errorf("redistest: PauseReplication: replica %s: %w", s.addr, err)
	}
	host, _ := redisproc.InfoField(info, "master_host")
	port, _ := redisproc.InfoField(info, "master_port")
	links, err := redisproc.CommandString(ctx, s.addr, "CLIENT", "LIST", "TYPE", "master")
	if err != nil {
		return fmt.Errorf("redistest: PauseReplication: replica %s: %w", s.addr, err)
	}
	// A container's Redis 6.0 has no laddr field and no socket this
	// process can read (replicas60.go).
	if s.ctr != nil && host != "" && port != "" && links != "" && !strings.Contains(links, " laddr=") {
		return pauseReplicationWithoutLaddr(ctx, s, net.JoinHostPort(host, port))
	}
	// Redis 6.0 has no laddr field: the link's local address is read from
	// the socket of its fd, before the replica is frozen.
	var laddrs []string
	for line := range strings.Lines(links) {
		laddr := clientField(line, "laddr")
		if fd, err := strconv.Atoi(clientField(line, "fd")); laddr == "" && err == nil && s.proc != nil {
			if laddr, err = socketLocalAddr(s.proc.PID(), fd); err != nil {
				return fmt.Errorf("redistest: PauseReplication: replica %s: %w", s.addr, err)
			}
		}
		laddrs = append(laddrs, laddr)
	}
	if err := s.Pause(); err != nil {
		return err
	}
	for _, laddr := range laddrs {
		if laddr == "" || host == "" || port == "" {
			continue
		}
		master := net.JoinHostPort(host, port)
		_, err := redisproc.Command(ctx, master, "CLIENT", "KILL", "ADDR", laddr)
		var re redisproc.ReplyError
		if err != nil && !errors.As(err, &re) { // "No such client": the link was already gone
			return fmt.Errorf("redistest: PauseReplication: closing the link of replica %s on master %s: %w", s.addr, master, err)
		}
	}
	return nil
}

// clientField returns the value of field in one line of CLIENT LIST.
func clientField(line, field string) string {
	for kv := range strings.FieldsSeq(line) {
		if k, v, ok := strings.Cut(kv, "="); ok && k == field {
			return v
		}
	}
	return ""
}

// ResumeReplication continues replica i with SIGCONT. It reconnects to its
// master within about a second and catches up on what the master wrote
// meanwhile (see WaitSynced), unless the master is gone.
func (r *ReplicaSet) ResumeReplication(i int) error {
	s, err := r.replica("ResumeReplication", i)
	if err != nil {
		return err
	}
	return s.Resume()
}

// Promote turns replica i into a master with REPLICAOF NO ONE, keeping its
// data set, and waits until it reports role:master or ctx ends. It does not
// touch the old master or the other replicas, which keep replicating from
// the old master: this is a manual failover, as T9 and T26 of the
// reliability plan do it after killing the master.
func (r *ReplicaSet) Promote(ctx context.Context, i int) error {
	s, err := r.replica("Promote", i)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, replicaTimeout)
	defer cancel()
	if _, err := redisproc.Command(ctx, s.addr, "REPLICAOF", "NO", "ONE"); err != nil {
		return fmt.Errorf("redistest: promoting replica %s: REPLICAOF NO ONE: %w%s", s.addr, err, logTails(s))
	}
	err = waitUntil(ctx, pollInterval, "replica "+s.addr+" did not become a master", func(ctx context.Context) error {
		return checkRole(ctx, s, "master")
	})
	if err != nil {
		return fmt.Errorf("redistest: %w%s", err, logTails(s))
	}
	return nil
}

// WaitSynced waits until every replica that still replicates from the
// master reports master_link_status:up and WAIT on the master, for all of
// them, acknowledges the master's current offset. It returns at once if no
// replica replicates from the master any more (after Promote of the only
// one). A paused replica makes it wait until ctx ends.
func (r *ReplicaSet) WaitSynced(ctx context.Context) error {
	what := "replicas of " + r.master.addr + " did not sync"
	return waitUntil(ctx, pollInterval, what, func(ctx context.Context) error {
		want := 0
		for _, s := range r.replicas {
			info, err := redisproc.CommandString(ctx, s.addr, "INFO", "replication")
			if err != nil {
				return fmt.Errorf("%s: %w", s.addr, err)
			}
			if port, _ := redisproc.InfoField(info, "master_port"); port != strconv.Itoa(r.master.port) {
				continue // promoted, or replicating from someone else
			}
			if link, _ := redisproc.InfoField(info, "master_link_status"); link != "up" {
				return fmt.Errorf("replica %s: master_link_status is %q", s.addr, link)
			}
			want++
		}
		if want == 0 {
			return nil
		}
		// WAIT counts the replicas that acknowledged everything the master
		// had when it was called; on a new connection it counts those that
		// are online and have acknowledged anything.
		n := strconv.Itoa(want)
		acked, err := redisproc.Command(ctx, r.master.addr, "WAIT", n, "1000")
		if err != nil {
			return fmt.Errorf("%s: WAIT %s 1000: %w", r.master.addr, n, err)
		}
		if acked != int64(want) {
			return fmt.Errorf("%s: WAIT %s 1000 returned %v", r.master.addr, n, acked)
		}
		return nil
	})
}

// checkRole checks once that s reports role (master or slave) in INFO
// replication.
func checkRole(ctx context.Context, s *Server, role string) error {
	info, err := redisproc.CommandString(ctx, s.addr, "INFO", "replication")
	if err != nil {
		return fmt.Errorf("%s: %w", s.addr, err)
	}
	if got, _ := redisproc.InfoField(info, "role"); got != role {
		return fmt.Errorf("%s reports role %q, want %q", s.addr, got, role)
	}
	return nil
}

// cleanup is the tb.Cleanup of Replicas: it logs each server's output if
// the test failed, then stops them, replicas first.
func (r *ReplicaSet) cleanup(tb testing.TB) {
	for _, s := range slices.Backward(r.all()) {
		s.cleanup(tb)
	}
}

// Stop stops the replicas, last first, then the master (see Server.Stop).
// It is safe to call more than once and on a nil ReplicaSet.
func (r *ReplicaSet) Stop() {
	if r == nil {
		return
	}
	for _, s := range slices.Backward(r.all()) {
		s.Stop()
	}
}
