package redistest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/redisproc"
)

const (
	// SentinelDownAfter is how long the sentinels of a SentinelGroup wait
	// for an answer before they consider a server down
	// (down-after-milliseconds).
	SentinelDownAfter = time.Second
	// SentinelFailoverTimeout is the failover-timeout of a SentinelGroup.
	// A failover that stalls is retried after twice this.
	SentinelFailoverTimeout = 3 * time.Second
	// sentinelGroupTimeout bounds the start of a SentinelGroup: sentinels
	// find each other through hello messages sent every two seconds.
	sentinelGroupTimeout = 20 * time.Second
	// sentinelPollInterval is the pause between two checks of the
	// sentinels.
	sentinelPollInterval = 50 * time.Millisecond
)

// A SentinelGroup is a master, its replicas and n Redis Sentinels that
// monitor them under the name MasterSet, each a process started by this
// package, or each a container when EnvImage names an image. The sentinels need a majority, n/2+1, to agree that the master
// is down (the quorum), consider it down after SentinelDownAfter without an
// answer, and use SentinelFailoverTimeout. With three sentinels a paused
// master is replaced in three to six seconds. Its methods are safe for
// concurrent use.
type SentinelGroup struct {
	servers   []*Server // the master and replicas as started
	sentinels []*Server
	quorum    int
	dir       string // the sentinels' config files

	mu     sync.Mutex
	master *Server // as of the start or the last WaitFailover
}

// Sentinels starts a SentinelGroup of n sentinels for the test tb and
// stops it with tb.Cleanup (sentinels first, the master last); see
// StartSentinels. It skips or fails tb as SkipOrFail does when
// redis-server (or Docker and the image) is missing. REDIS_ADDR is ignored.
func Sentinels(tb testing.TB, n int, opts ...Option) *SentinelGroup {
	tb.Helper()
	g, err := StartSentinels(n, opts...)
	SkipOrFail(tb, err)
	tb.Cleanup(func() { g.cleanup(tb) })
	return g
}

// StartSentinels starts a master, its replicas (one unless WithReplicas
// says otherwise) and n ≥ 1 sentinels. It returns once every sentinel
// reports the master, every replica with its link up, and the n-1 other
// sentinels, which takes about two seconds for n > 1. The caller must call
// Stop. If redis-server is not on PATH (or, with EnvImage, Docker or the
// image is missing), the error wraps ErrUnavailable.
func StartSentinels(n int, opts ...Option) (*SentinelGroup, error) {
	o := buildOptions(opts)
	replicas := 1
	if o.replicasSet {
		replicas = o.replicas
	}
	if n < 1 || replicas < 1 {
		return nil, fmt.Errorf("redistest: StartSentinels needs at least one sentinel and one replica, not %d and %d", n, replicas)
	}
	set, err := StartReplicas(replicas, opts...)
	if err != nil {
		return nil, err
	}
	g := &SentinelGroup{servers: set.all(), quorum: n/2 + 1, master: set.master}
	if g.dir, err = os.MkdirTemp("", "redistest-sentinels-"); err != nil {
		g.Stop()
		return nil, fmt.Errorf("redistest: %w", err)
	}
	for i := range n {
		s, err := g.startSentinel(i)
		if err != nil {
			g.Stop()
			return nil, err
		}
		g.sentinels = append(g.sentinels, s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), sentinelGroupTimeout)
	defer cancel()
	what := fmt.Sprintf("sentinels %v did not report master %s with %d replicas and each other", g.SentinelAddrs(), g.master.addr, replicas)
	err = waitUntil(ctx, sentinelPollInterval, what, func(ctx context.Context) error {
		for _, s := range g.sentinels {
			if err := g.checkSentinel(ctx, s, replicas); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		err = fmt.Errorf("redistest: %w%s", err, logTails(g.sentinels...))
		g.Stop()
		return nil, err
	}
	return g, nil
}

// startSentinel starts sentinel i (see startSentinelServer).
func (g *SentinelGroup) startSentinel(i int) (*Server, error) {
	set := sentinelMasterSet
	return startSentinelServer(g.dir, "sentinel-"+strconv.Itoa(i)+".conf", []string{
		"bind 127.0.0.1",
		fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d %d", set, g.master.port, g.quorum),
		fmt.Sprintf("sentinel down-after-milliseconds %s %d", set, SentinelDownAfter.Milliseconds()),
		fmt.Sprintf("sentinel failover-timeout %s %d", set, SentinelFailoverTimeout.Milliseconds()),
		"sentinel parallel-syncs " + set + " 1",
	})
}

// checkSentinel checks once that sentinel s reports the group's master,
// replicas healthy replicas of it, and the other sentinels.
func (g *SentinelGroup) checkSentinel(ctx context.Context, s *Server, replicas int) error {
	c, err := redisproc.Dial(ctx, s.addr)
	if err != nil {
		return fmt.Errorf("sentinel %s: %w", s.addr, err)
	}
	defer c.Close()
	reply, err := c.Do("SENTINEL", "MASTER", sentinelMasterSet)
	if err != nil {
		return fmt.Errorf("sentinel %s: SENTINEL MASTER: %w", s.addr, err)
	}
	m := fieldMap(reply)
	if m["ip"] != "127.0.0.1" || m["port"] != strconv.Itoa(g.master.port) || m["flags"] != "master" {
		return fmt.Errorf("sentinel %s reports master %s:%s with flags %q", s.addr, m["ip"], m["port"], m["flags"])
	}
	if others := strconv.Itoa(len(g.sentinels) - 1); m["num-other-sentinels"] != others {
		return fmt.Errorf("sentinel %s knows %s other sentinels, want %s", s.addr, m["num-other-sentinels"], others)
	}
	reply, err = c.Do("SENTINEL", "REPLICAS", sentinelMasterSet)
	if err != nil {
		return fmt.Errorf("sentinel %s: SENTINEL REPLICAS: %w", s.addr, err)
	}
	list, _ := reply.([]any)
	healthy := 0
	for _, r := range list {
		f := fieldMap(r)
		// flags is "slave" alone unless the replica is disconnected or down.
		if f["flags"] == "slave" && f["master-link-status"] == "ok" {
			healthy++
		}
	}
	if healthy != replicas {
		return fmt.Errorf("sentinel %s reports %d healthy replicas, want %d", s.addr, healthy, replicas)
	}
	return nil
}

// MasterSet returns the name under which the sentinels monitor the master,
// "mymaster".
func (g *SentinelGroup) MasterSet() string { return sentinelMasterSet }

// Quorum returns how many sentinels must agree that the master is down.
func (g *SentinelGroup) Quorum() int { return g.quorum }

// SentinelAddrs returns the sentinels' addresses ("127.0.0.1:port"), the
// InitAddress of a sentinel client.
func (g *SentinelGroup) SentinelAddrs() []string {
	addrs := make([]string, len(g.sentinels))
	for i, s := range g.sentinels {
		addrs[i] = s.addr
	}
	return addrs
}

// SentinelServers returns the sentinel processes, to pause or kill them.
func (g *SentinelGroup) SentinelServers() []*Server { return slices.Clone(g.sentinels) }

// Servers returns the data servers, the started master first, then its
// replicas.
func (g *SentinelGroup) Servers() []*Server { return slices.Clone(g.servers) }

// Master returns the master: the one started as master until WaitFailover
// reports another. Its Client talks to it directly, bypassing the
// sentinels.
func (g *SentinelGroup) Master() *Server {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.master
}

// Replicas returns the data servers other than Master. After a failover
// the sentinels reconfigure them as replicas of the new master, the old
// master once it is reachable again (see WaitReplicaOfMaster).
func (g *SentinelGroup) Replicas() []*Server {
	m := g.Master()
	return slices.DeleteFunc(g.Servers(), func(s *Server) bool { return s == m })
}

// WaitFailover waits until a quorum of sentinels answers SENTINEL
// GET-MASTER-ADDR-BY-NAME with a data server other than Master and that
// server reports role:master, records it as the new Master and returns it.
// It returns an error if ctx ends first, with the last check and the
// sentinels' log tails. Sentinels that do not answer, for example paused ones, are not counted.
func (g *SentinelGroup) WaitFailover(ctx context.Context) (newMaster *Server, err error) {
	old := g.Master()
	what := "sentinels did not replace master " + old.addr
	err = waitUntil(ctx, sentinelPollInterval, what, func(ctx context.Context) error {
		votes := map[*Server]int{}
		for _, s := range g.sentinels {
			addr, err := sentinelMasterAddr(ctx, s)
			if err != nil {
				continue
			}
			i := slices.IndexFunc(g.servers, func(d *Server) bool { return d.addr == addr })
			if i < 0 {
				return fmt.Errorf("sentinel %s names master %s, which is not one of the group's servers", s.addr, addr)
			}
			votes[g.servers[i]]++
		}
		for cand, n := range votes {
			if cand != old && n >= g.quorum {
				if err := checkRole(ctx, cand, "master"); err != nil {
					return err
				}
				newMaster = cand
				return nil
			}
		}
		return fmt.Errorf("sentinels name masters %v", votes)
	})
	if err != nil {
		return nil, fmt.Errorf("redistest: %w%s", err, logTails(g.sentinels...))
	}
	g.mu.Lock()
	g.master = newMaster
	g.mu.Unlock()
	return newMaster, nil
}

// sentinelMasterAddr asks sentinel s for the master's address.
func sentinelMasterAddr(ctx context.Context, s *Server) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	reply, err := redisproc.Command(ctx, s.addr, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", sentinelMasterSet)
	if err != nil {
		return "", err
	}
	addr, _ := reply.([]any)
	if len(addr) != 2 {
		return "", fmt.Errorf("sentinel %s: SENTINEL GET-MASTER-ADDR-BY-NAME answered %v", s.addr, reply)
	}
	host, _ := addr[0].(string)
	port, _ := addr[1].(string)
	return host + ":" + port, nil
}

// WaitReplicaOfMaster waits until s reports role:slave with Master as its
// master and its link up, or ctx ends. After a failover the sentinels
// reconfigure the old master this way once it answers again, which takes
// about eight seconds after it comes back; until then it still claims to be
// a master.
func (g *SentinelGroup) WaitReplicaOfMaster(ctx context.Context, s *Server) error {
	m := g.Master()
	what := fmt.Sprintf("%s did not become a replica of %s", s.addr, m.addr)
	err := waitUntil(ctx, sentinelPollInterval, what, func(ctx context.Context) error {
		info, err := redisproc.CommandString(ctx, s.addr, "INFO", "replication")
		if err != nil {
			return err
		}
		role, _ := redisproc.InfoField(info, "role")
		port, _ := redisproc.InfoField(info, "master_port")
		link, _ := redisproc.InfoField(info, "master_link_status")
		if role != "slave" || port != strconv.Itoa(m.port) || link != "up" {
			return fmt.Errorf("role %q, master_port %q, master_link_status %q", role, port, link)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redistest: %w%s", err, logTails(s))
	}
	return nil
}

// Client returns a rueidis sentinel client (Mode ClientModeSentinel) that
// asks the sentinels for the master of MasterSet and sends every command
// there, following failovers, closed by tb.Cleanup. It fails tb if it
// cannot connect.
func (g *SentinelGroup) Client(tb testing.TB) rueidis.Client {
	tb.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: g.SentinelAddrs(),
		Sentinel:    rueidis.SentinelOption{MasterSet: sentinelMasterSet},
	})
	if err != nil {
		tb.Fatalf("redistest: connecting to master %s through sentinels %v: %v", sentinelMasterSet, g.SentinelAddrs(), err)
	}
	tb.Cleanup(c.Close)
	return c
}

// cleanup is the tb.Cleanup of Sentinels: it logs each process's output if
// the test failed, then stops them all.
func (g *SentinelGroup) cleanup(tb testing.TB) {
	for _, s := range g.sentinels {
		s.cleanup(tb)
	}
	for _, s := range slices.Backward(g.servers) {
		s.cleanup(tb)
	}
	g.Stop()
}

// Stop stops the sentinels, then the replicas and the master (see
// Server.Stop), and removes the sentinels' config files. It is safe to call
// more than once and on a nil SentinelGroup.
func (g *SentinelGroup) Stop() {
	if g == nil {
		return
	}
	for _, s := range g.sentinels {
		s.Stop()
	}
	for _, s := range slices.Backward(g.servers) {
		s.Stop()
	}
	if g.dir != "" {
		_ = os.RemoveAll(g.dir)
	}
}
