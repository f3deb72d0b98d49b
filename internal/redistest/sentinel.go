package redistest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/redisproc"
)

const (
	// sentinelMasterSet is the name under which the sentinel monitors the
	// master.
	sentinelMasterSet = "mymaster"
	// sentinelTimeout bounds the wait for a new sentinel to report the
	// master and its replica.
	sentinelTimeout = 15 * time.Second
)

// SentinelServers is a master, one replica of it and one Redis Sentinel
// that monitors them under the name MasterSet, each a redis-server process
// started by this package, or each a container when EnvImage names an
// image. The sentinel runs in sentinel mode
// (<server> <config file> --sentinel) with a quorum of 1, considers the
// master down after 1s without an answer and has a failover timeout of 5s.
type SentinelServers struct {
	master, replica, sentinel *Server
	// dir holds the sentinel's config file, which the sentinel rewrites as
	// its state changes.
	dir string
}

// Sentinel starts a master, a replica and a sentinel for the test tb and
// stops them with tb.Cleanup (the sentinel first, the master last);
// extraArgs are appended to the command lines of the master and the
// replica, not of the sentinel. It returns once the replica is in sync (as
// Replicated does) and the sentinel reports the master for MasterSet and
// knows the replica as healthy, so a sentinel client connects at once. It
// skips or fails tb as SkipOrFail does when redis-server (or Docker and the
// image) is missing. REDIS_ADDR is ignored.
func Sentinel(tb testing.TB, extraArgs ...string) *SentinelServers {
	tb.Helper()
	s, err := StartSentinel(WithArgs(extraArgs...))
	SkipOrFail(tb, err)
	tb.Cleanup(func() { s.cleanup(tb) })
	return s
}

// StartSentinel is Sentinel without a testing.TB: the caller must call
// Stop. If redis-server (or Docker and the image) is not available, the
// error wraps ErrUnavailable.
func StartSentinel(opts ...Option) (*SentinelServers, error) {
	master, replica, err := StartReplicated(opts...)
	if err != nil {
		return nil, err
	}
	s := &SentinelServers{master: master, replica: replica}
	if err := s.startSentinel(); err != nil {
		s.Stop()
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), sentinelTimeout)
	defer cancel()
	for {
		err = s.checkMonitoring(ctx)
		if err == nil {
			return s, nil
		}
		select {
		case <-ctx.Done():
			err = fmt.Errorf("redistest: sentinel %s did not report master %s with replica %s: %w (last check: %v)%s",
				s.sentinel.addr, master.addr, replica.addr, ctx.Err(), err, logTails(s.sentinel))
			s.Stop()
			return nil, err
		case <-time.After(pollInterval):
		}
	}
}

// startSentinel starts the sentinel, with its config file in a new
// directory (see startSentinelServer).
func (s *SentinelServers) startSentinel() error {
	dir, err := os.MkdirTemp("", "redistest-sentinel-")
	if err != nil {
		return fmt.Errorf("redistest: %w", err)
	}
	s.dir = dir
	sentinel, err := startSentinelServer(dir, "sentinel.conf", []string{
		"bind 127.0.0.1",
		"sentinel monitor " + sentinelMasterSet + " 127.0.0.1 " + strconv.Itoa(s.master.port) + " 1",
		"sentinel down-after-milliseconds " + sentinelMasterSet + " 1000",
		"sentinel failover-timeout " + sentinelMasterSet + " 5000",
	})
	if err != nil {
		return err
	}
	s.sentinel = sentinel
	return nil
}

// checkMonitoring checks once that the sentinel reports s.master as the
// master of MasterSet and s.replica as a healthy replica of it.
func (s *SentinelServers) checkMonitoring(ctx context.Context) error {
	c, err := redisproc.Dial(ctx, s.sentinel.addr)
	if err != nil {
		return err
	}
	defer c.Close()
	reply, err := c.Do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", sentinelMasterSet)
	if err != nil {
		return fmt.Errorf("SENTINEL GET-MASTER-ADDR-BY-NAME: %w", err)
	}
	if addr, _ := reply.([]any); len(addr) != 2 || addr[0] != "127.0.0.1" || addr[1] != strconv.Itoa(s.master.port) {
		return fmt.Errorf("SENTINEL GET-MASTER-ADDR-BY-NAME answered %v", reply)
	}
	reply, err = c.Do("SENTINEL", "REPLICAS", sentinelMasterSet)
	if err != nil {
		return fmt.Errorf("SENTINEL REPLICAS: %w", err)
	}
	replicas, ok := reply.([]any)
	if !ok {
		return fmt.Errorf("SENTINEL REPLICAS answered %v", reply)
	}
	for _, r := range replicas {
		f := fieldMap(r)
		if f["ip"] != "127.0.0.1" || f["port"] != strconv.Itoa(s.replica.port) {
			continue
		}
		// flags is "slave" alone unless the replica is disconnected or down.
		if f["flags"] != "slave" || f["master-link-status"] != "ok" {
			return fmt.Errorf("sentinel reports replica %s with flags %q and master-link-status %q",
				s.replica.addr, f["flags"], f["master-link-status"])
		}
		return nil
	}
	return fmt.Errorf("sentinel does not know replica %s yet", s.replica.addr)
}

// fieldMap turns a reply of alternating names and values, as SENTINEL
// REPLICAS gives for each replica, into a map. Values that are not strings
// are left out.
func fieldMap(reply any) map[string]string {
	fields, _ := reply.([]any)
	m := make(map[string]string, len(fields)/2)
	for i := 0; i+1 < len(fields); i += 2 {
		k, _ := fields[i].(string)
		if v, ok := fields[i+1].(string); ok {
			m[k] = v
		}
	}
	return m
}

// cleanup is the tb.Cleanup of Sentinel: it logs the output of each server
// if the test failed, then stops them all.
func (s *SentinelServers) cleanup(tb testing.TB) {
	s.sentinel.cleanup(tb)
	s.replica.cleanup(tb)
	s.master.cleanup(tb)
	s.Stop()
}

// MasterSet returns the name under which the sentinel monitors the master,
// "mymaster".
func (s *SentinelServers) MasterSet() string { return sentinelMasterSet }

// SentinelAddrs returns the address of the sentinel ("127.0.0.1:port"), the
// InitAddress of a sentinel client.
func (s *SentinelServers) SentinelAddrs() []string { return []string{s.sentinel.addr} }

// Master returns the master that the sentinel monitored when it started.
// Its Client talks to it directly, bypassing the sentinel.
func (s *SentinelServers) Master() *Server { return s.master }

// Replica returns the replica of the master.
func (s *SentinelServers) Replica() *Server { return s.replica }

// Client returns a rueidis sentinel client (Mode ClientModeSentinel) that
// asks the sentinel for the master of MasterSet and sends every command
// there, closed by tb.Cleanup. It fails tb if it cannot connect.
func (s *SentinelServers) Client(tb testing.TB) rueidis.Client {
	tb.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: s.SentinelAddrs(),
		Sentinel:    rueidis.SentinelOption{MasterSet: sentinelMasterSet},
	})
	if err != nil {
		tb.Fatalf("redistest: connecting to master %s through sentinel %s: %v", sentinelMasterSet, s.sentinel.addr, err)
	}
	tb.Cleanup(c.Close)
	return c
}

// Stop stops the sentinel, the replica and the master, in that order (see
// Server.Stop), and removes the sentinel's config file. It is safe to call
// more than once and on a nil SentinelServers.
func (s *SentinelServers) Stop() {
	if s == nil {
		return
	}
	s.sentinel.Stop()
	s.replica.Stop()
	s.master.Stop()
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}
