package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redisproc"
)

const (
	// clusterMasters is the number of masters of a cluster.
	clusterMasters = 3
	// clusterTimeout bounds forming the cluster once its nodes run, and
	// each Failover, Reshard and Refresh.
	clusterTimeout = 30 * time.Second
	// clusterPollInterval is the pause between two checks of the cluster.
	clusterPollInterval = 20 * time.Millisecond
)

// ClusterServers is a Redis Cluster of three masters, each with the
// replicas WithReplicas asks for (none by default), each node a
// redis-server process started by this package. Its slot assignment is at
// first the one redis-cli makes (0-5460, 5461-10922, 10923-16383);
// Failover, Reshard and Refresh change what it knows of the cluster, and
// NodeForSlot, NodeForKey, Masters, Replicas and MasterOf follow. Its
// methods are safe for concurrent use.
type ClusterServers struct {
	nodes    []*Server // the first masters first, then the replicas
	replicas int       // per master

	op sync.Mutex // serialises Failover, Reshard and Refresh

	mu   sync.RWMutex
	topo topology
}

// topology is what the nodes agree on: who owns each slot, who replicates
// whom.
type topology struct {
	owner  [SlotCount]uint8 // index in nodes of each slot's master
	master []int            // index in nodes of each node's master; -1 for a master
}

// Cluster starts a cluster for the test tb and stops it with tb.Cleanup;
// extraArgs are appended to every node's command line. It returns once every
// node reports cluster_state:ok and all nodes agree on CLUSTER SLOTS, so a
// rueidis client sees the final topology. It skips or fails tb as SkipOrFail
// does when redis-server or redis-cli is missing. REDIS_ADDR is ignored.
// ClusterWith does the same with Options.
func Cluster(tb testing.TB, extraArgs ...string) *ClusterServers {
	tb.Helper()
	return ClusterWith(tb, WithArgs(extraArgs...))
}

// ClusterWith is Cluster with Options, for example WithReplicas(1) for
// three masters with one replica each.
func ClusterWith(tb testing.TB, opts ...Option) *ClusterServers {
	tb.Helper()
	c, err := StartCluster(opts...)
	SkipOrFail(tb, err)
	tb.Cleanup(func() {
		for _, n := range slices.Backward(c.nodes) {
			n.cleanup(tb)
		}
	})
	return c
}

// StartCluster is Cluster without a testing.TB: the caller must call Stop.
// With WithReplicas(n), each master gets n replicas, and StartCluster also
// waits until every replica reports master_link_status:up. If redis-server
// or redis-cli is not on PATH, the error wraps ErrUnavailable.
func StartCluster(opts ...Option) (*ClusterServers, error) {
	if img, ok, err := envImage(); ok {
		if err != nil {
			return nil, err
		}
		c, err := StartContainerCluster(img, opts...)
		if err == nil {
			announce("cluster node", c.nodes[0])
		}
		return c, err
	}
	o := buildOptions(opts)
	if o.replicas < 0 {
		return nil, fmt.Errorf("redistest: StartCluster: negative number of replicas per master %d", o.replicas)
	}
	if _, err := lookBinary("redis-server"); err != nil {
		return nil, err
	}
	cli, err := lookBinary("redis-cli")
	if err != nil {
		return nil, err
	}
	args := o.args
	if o.replicas > 0 {
		// CLUSTER SLOTS lists a replica only once the other nodes have heard,
		// by gossip, of a replication offset above 0. A new master's offset
		// grows when it pings its replicas, every 10 s by default.
		ping := []string{"--repl-ping-replica-period", "1"}
		args = slices.Concat(replicaArgs, ping, o.args)
	}
	c := &ClusterServers{replicas: o.replicas}
	for range clusterMasters * (1 + o.replicas) {
		n, err := startProcess(args, true)
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.nodes = append(c.nodes, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	if err := c.create(ctx, cli); err != nil {
		c.Stop()
		return nil, err
	}
	if err := c.waitStable(ctx, nil); err != nil {
		err = fmt.Errorf("%w%s", err, logTails(c.nodes...))
		c.Stop()
		return nil, err
	}
	return c, nil
}

// create runs redis-cli --cluster create over the nodes. redis-cli makes
// masters of the first three and spreads the others over them as replicas.
func (c *ClusterServers) create(ctx context.Context, cli string) error {
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", strconv.Itoa(c.replicas), "--cluster-yes")
	cmd := exec.CommandContext(ctx, cli, args...)
	cmd.SysProcAttr = redisproc.SysProcAttr()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("redistest: redis-cli %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// waitStable polls until the cluster is stable (see readTopology) and want,
// if not nil, accepts its topology, then records that topology.
func (c *ClusterServers) waitStable(ctx context.Context, want func(*topology) error) error {
	var t *topology
	err := waitUntil(ctx, clusterPollInterval, fmt.Sprintf("cluster %v did not become stable", c.Addrs()), func(ctx context.Context) error {
		var err error
		if t, err = c.readTopology(ctx); err != nil {
			return err
		}
		if want != nil {
			return want(t)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redistest: %w", err)
	}
	c.mu.Lock()
	c.topo = *t
	c.mu.Unlock()
	return nil
}

// readTopology checks the cluster once and returns its topology if it is
// stable: every node sees a healthy cluster of all nodes and three masters
// at one current epoch, has no slot migrating or importing, and returns the same CLUSTER SLOTS,
// in which every master has its replicas; and every replica's link to its
// master is up.
func (c *ClusterServers) readTopology(ctx context.Context) (*topology, error) {
	var first, epoch string
	var t topology
	for i, n := range c.nodes {
		info, err := redisproc.CommandString(ctx, n.addr, "CLUSTER", "INFO")
		if err != nil {
			return nil, fmt.Errorf("%s: CLUSTER INFO: %w", n.addr, err)
		}
		// A config epoch bumped by a reshard's last slot, not yet heard
		// of by every node, can make a failover started now promote a
		// replica with a stale slot map.
		e, _ := redisproc.InfoField(info, "cluster_current_epoch")
		if i == 0 {
			epoch = e
		} else if e != epoch {
			return nil, fmt.Errorf("%s: cluster_current_epoch is %s but %s's is %s", n.addr, e, c.nodes[0].addr, epoch)
		}
		for field, want := range map[string]string{
			"cluster_state":          "ok",
			"cluster_slots_ok":       strconv.Itoa(SlotCount),
			"cluster_known_nodes":    strconv.Itoa(len(c.nodes)),
			"cluster_size":           strconv.Itoa(clusterMasters),
			"cluster_slots_assigned": strconv.Itoa(SlotCount),
		} {
			if got, _ := redisproc.InfoField(info, field); got != want {
				return nil, fmt.Errorf("%s: %s is %q, want %q", n.addr, field, got, want)
			}
		}
		if err := checkNoMigration(ctx, n); err != nil {
			return nil, err
		}
		reply, err := redisproc.Command(ctx, n.addr, "CLUSTER", "SLOTS")
		if err != nil {
			return nil, fmt.Errorf("%s: CLUSTER SLOTS: %w", n.addr, err)
		}
		view, err := c.parseSlots(reply, &t)
		if err != nil {
			return nil, fmt.Errorf("%s: CLUSTER SLOTS: %w", n.addr, err)
		}
		if i == 0 {
			first = view
		} else if view != first {
			return nil, fmt.Errorf("%s sees slots %s but %s sees %s", n.addr, view, c.nodes[0].addr, first)
		}
	}
	for i, m := range t.master {
		if m < 0 {
			continue
		}
		info, err := redisproc.CommandString(ctx, c.nodes[i].addr, "INFO", "replication")
		if err != nil {
			return nil, fmt.Errorf("%s: INFO replication: %w", c.nodes[i].addr, err)
		}
		port, _ := redisproc.InfoField(info, "master_port")
		link, _ := redisproc.InfoField(info, "master_link_status")
		if port != strconv.Itoa(c.nodes[m].port) || link != "up" {
			return nil, fmt.Errorf("replica %s: master_port %q, master_link_status %q; want %d, up", c.nodes[i].addr, port, link, c.nodes[m].port)
		}
	}
	return &t, nil
}

// checkNoMigration checks that node n has no slot in migrating or importing
// state, which CLUSTER NODES shows as [slot->-id] or [slot-<-id] on its own
// line.
func checkNoMigration(ctx context.Context, n *Server) error {
	nodes, err := redisproc.CommandString(ctx, n.addr, "CLUSTER", "NODES")
	if err != nil {
		return fmt.Errorf("%s: CLUSTER NODES: %w", n.addr, err)
	}
	for line := range strings.Lines(nodes) {
		fields := strings.Fields(line)
		if len(fields) > 2 && strings.Contains(fields[2], "myself") && strings.Contains(line, "[") {
			return fmt.Errorf("%s has slots in migration: %s", n.addr, strings.TrimSpace(line))
		}
	}
	return nil
}

// parseSlots reads a CLUSTER SLOTS reply into t and returns a canonical
// description of it for comparison. It fails unless the reply assigns every
// slot to one of c's nodes at 127.0.0.1, every node is either a master with
// slots and c.replicas replicas or a replica of one master.
func (c *ClusterServers) parseSlots(reply any, t *topology) (string, error) {
	ranges, ok := reply.([]any)
	if !ok {
		return "", fmt.Errorf("unexpected reply %v", reply)
	}
	var desc []string
	covered := 0
	t.master = make([]int, len(c.nodes))
	seen := make([]bool, len(c.nodes))
	for i := range t.master {
		t.master[i] = -2 // not seen yet
	}
	for _, r := range ranges {
		fields, _ := r.([]any)
		if len(fields) < 3 {
			return "", fmt.Errorf("unexpected slot range %v", r)
		}
		start, ok1 := fields[0].(int64)
		end, ok2 := fields[1].(int64)
		if !ok1 || !ok2 || start < 0 || end < start || end >= SlotCount {
			return "", fmt.Errorf("unexpected slot range %v", r)
		}
		var ports []string
		idx := make([]int, 0, len(fields)-2)
		for _, f := range fields[2:] {
			node, _ := f.([]any)
			if len(node) < 2 {
				return "", fmt.Errorf("unexpected slot range %v", r)
			}
			ip, _ := node[0].(string)
			port, _ := node[1].(int64)
			i := slices.IndexFunc(c.nodes, func(n *Server) bool { return int64(n.port) == port })
			if ip != "127.0.0.1" || i < 0 {
				return "", fmt.Errorf("slots %d-%d served by unknown node %v:%v", start, end, ip, port)
			}
			idx = append(idx, i)
			ports = append(ports, strconv.FormatInt(port, 10))
		}
		m := idx[0]
		if len(idx)-1 != c.replicas {
			return "", fmt.Errorf("slots %d-%d: master %s has %d replicas, want %d", start, end, c.nodes[m].addr, len(idx)-1, c.replicas)
		}
		for slot := start; slot <= end; slot++ {
			t.owner[slot] = uint8(m)
		}
		covered += int(end - start + 1)
		if t.master[m] >= 0 {
			return "", fmt.Errorf("%s is a master and a replica", c.nodes[m].addr)
		}
		t.master[m] = -1
		seen[m] = true
		for _, r := range idx[1:] {
			if t.master[r] == -1 || (t.master[r] >= 0 && t.master[r] != m) {
				return "", fmt.Errorf("%s has two roles", c.nodes[r].addr)
			}
			t.master[r] = m
			seen[r] = true
		}
		slices.Sort(ports[1:])
		desc = append(desc, fmt.Sprintf("%d-%d@%s", start, end, strings.Join(ports, "/")))
	}
	if covered != SlotCount || slices.Contains(seen, false) {
		return "", fmt.Errorf("incomplete assignment %v", desc)
	}
	slices.Sort(desc)
	return strings.Join(desc, ","), nil
}

// Addrs returns the nodes' addresses ("127.0.0.1:port"), in the order of
// Nodes.
func (c *ClusterServers) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.addr
	}
	return addrs
}

// Nodes returns every node, in the order of Addrs: the three masters the
// cluster was formed with, then the replicas. Without replicas these are
// the three masters.
func (c *ClusterServers) Nodes() []*Server {
	return slices.Clone(c.nodes)
}

// Masters returns the nodes that are masters now (as of the cluster's
// formation or its last Failover or Refresh), in the order of Nodes.
func (c *ClusterServers) Masters() []*Server {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var ms []*Server
	for i, m := range c.topo.master {
		if m < 0 {
			ms = append(ms, c.nodes[i])
		}
	}
	return ms
}

// Replicas returns the nodes that are replicas now, in the order of Nodes;
// none without WithReplicas.
func (c *ClusterServers) Replicas() []*Server {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var rs []*Server
	for i, m := range c.topo.master {
		if m >= 0 {
			rs = append(rs, c.nodes[i])
		}
	}
	return rs
}

// MasterOf returns the master that replica n replicates now, or nil if n
// is a master or not a node of c.
func (c *ClusterServers) MasterOf(n *Server) *Server {
	i := slices.Index(c.nodes, n)
	c.mu.RLock()
	defer c.mu.RUnlock()
	if i < 0 || c.topo.master[i] < 0 {
		return nil
	}
	return c.nodes[c.topo.master[i]]
}

// NodeForSlot returns the master that owns slot (0 to SlotCount-1) as of
// the cluster's formation or its last Failover, Reshard or Refresh; slot is
// taken modulo SlotCount.
func (c *ClusterServers) NodeForSlot(slot uint16) *Server {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.nodes[c.topo.owner[slot%SlotCount]]
}

// NodeForKey returns the master that owns key's slot (see NodeForSlot).
func (c *ClusterServers) NodeForKey(key string) *Server {
	return c.NodeForSlot(keys.Slot(key))
}

// Refresh waits until the cluster is stable again, as StartCluster does,
// and rereads who owns each slot and who replicates whom, for example after
// a failover the cluster made on its own. It waits while any node is down
// or a replica's link is not up, and gives up when ctx ends or after 30 s.
func (c *ClusterServers) Refresh(ctx context.Context) error {
	c.op.Lock()
	defer c.op.Unlock()
	ctx, cancel := context.WithTimeout(ctx, clusterTimeout)
	defer cancel()
	if err := c.waitStable(ctx, nil); err != nil {
		return fmt.Errorf("%w%s", err, logTails(c.nodes...))
	}
	return nil
}

// Failover makes replica take over its master's slots with CLUSTER
// FAILOVER, which the old master agrees to and after which it becomes a
// replica of replica. It returns once every node agrees that replica owns
// those slots and the old master's link to it is up, or with an error if
// ctx ends first or after 30 s. The master must be reachable: a manual
// failover needs its cooperation and gives up after five seconds without
// it.
func (c *ClusterServers) Failover(ctx context.Context, replica *Server) error {
	c.op.Lock()
	defer c.op.Unlock()
	i := slices.Index(c.nodes, replica)
	if i < 0 {
		return fmt.Errorf("redistest: Failover: %s is not a node of cluster %v", nodeName(replica), c.Addrs())
	}
	c.mu.RLock()
	m := c.topo.master[i]
	c.mu.RUnlock()
	if m < 0 {
		return fmt.Errorf("redistest: Failover: %s is a master, not a replica", replica.addr)
	}
	ctx, cancel := context.WithTimeout(ctx, clusterTimeout)
	defer cancel()
	promoted := func(t *topology) error {
		if t.master[i] != -1 || t.master[m] != i {
			return fmt.Errorf("%s is not yet the master of %s", replica.addr, c.nodes[m].addr)
		}
		return nil
	}
	// A manual failover the cluster gives up on (its own timeout is 5 s;
	// on a loaded machine the vote can come too late after a recent
	// election) is asked for again, until clusterTimeout.
	for try := 0; ; try++ {
		if _, err := redisproc.Command(ctx, replica.addr, "CLUSTER", "FAILOVER"); err != nil {
			if try == 0 {
				return fmt.Errorf("redistest: CLUSTER FAILOVER on %s: %w%s", replica.addr, err, logTails(replica))
			}
			// Promoted after all, the others not yet agreeing: wait.
			if err := c.waitStable(ctx, promoted); err != nil {
				return fmt.Errorf("%w%s", err, logTails(replica, c.nodes[m]))
			}
			return nil
		}
		tctx, tcancel := context.WithTimeout(ctx, manualFailoverWait)
		err := c.waitStable(tctx, promoted)
		tcancel()
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("%w%s", err, logTails(replica, c.nodes[m]))
		}
	}
}

// manualFailoverWait is how long Failover waits for one CLUSTER FAILOVER:
// a little more than the server's own manual failover timeout.
const manualFailoverWait = 7 * time.Second

// nodeName names n in an error message.
func nodeName(n *Server) string {
	if n == nil {
		return "<nil>"
	}
	return n.addr
}

// Client returns a rueidis cluster client seeded with every node's address,
// closed by tb.Cleanup.
func (c *ClusterServers) Client(tb testing.TB) rueidis.Client {
	tb.Helper()
	return NewClient(tb, c.Addrs()...)
}

// Stop stops every node (see Server.Stop). It is safe to call more than once
// and on a nil ClusterServers.
func (c *ClusterServers) Stop() {
	if c == nil {
		return
	}
	for _, n := range slices.Backward(c.nodes) {
		n.Stop()
	}
}
