package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redisproc"
)

const (
	// clusterMasters is the number of masters of a cluster.
	clusterMasters = 3
	// clusterTimeout bounds forming the cluster once its nodes run.
	clusterTimeout = 20 * time.Second
	// clusterPollInterval is the pause between two checks of the cluster.
	clusterPollInterval = 20 * time.Millisecond
)

// ClusterServers is a Redis Cluster of three masters without replicas, each a
// redis-server process started by this package. Its slot assignment is the
// one redis-cli makes (0-5460, 5461-10922, 10923-16383).
type ClusterServers struct {
	nodes []*Server
	owner [SlotCount]uint8 // index in nodes of each slot's master
}

// Cluster starts a cluster for the test tb and stops it with tb.Cleanup;
// extraArgs are appended to every node's command line. It returns once every
// node reports cluster_state:ok and all nodes agree on CLUSTER SLOTS, so a
// rueidis client sees the final topology. It skips or fails tb as SkipOrFail
// does when redis-server or redis-cli is missing. REDIS_ADDR is ignored.
func Cluster(tb testing.TB, extraArgs ...string) *ClusterServers {
	tb.Helper()
	c, err := StartCluster(WithArgs(extraArgs...))
	SkipOrFail(tb, err)
	tb.Cleanup(func() {
		for _, n := range slices.Backward(c.nodes) {
			n.cleanup(tb)
		}
	})
	return c
}

// StartCluster is Cluster without a testing.TB: the caller must call Stop.
// If redis-server or redis-cli is not on PATH, the error wraps
// ErrUnavailable.
func StartCluster(opts ...Option) (*ClusterServers, error) {
	o := buildOptions(opts)
	if _, err := lookBinary("redis-server"); err != nil {
		return nil, err
	}
	cli, err := lookBinary("redis-cli")
	if err != nil {
		return nil, err
	}
	c := &ClusterServers{}
	for range clusterMasters {
		n, err := startProcess(o.args, true)
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
	if err := c.waitStable(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// create runs redis-cli --cluster create over the nodes.
func (c *ClusterServers) create(ctx context.Context, cli string) error {
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	cmd := exec.CommandContext(ctx, cli, args...)
	cmd.SysProcAttr = redisproc.SysProcAttr()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("redistest: redis-cli %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// waitStable polls until every node sees a healthy cluster and all nodes
// return the same CLUSTER SLOTS, then records which node owns each slot.
func (c *ClusterServers) waitStable(ctx context.Context) error {
	for {
		err := c.checkStable(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redistest: cluster %v did not become stable: %w (last check: %v)", c.Addrs(), ctx.Err(), err)
		case <-time.After(clusterPollInterval):
		}
	}
}

// checkStable checks the cluster once and, if it is stable, sets c.owner.
func (c *ClusterServers) checkStable(ctx context.Context) error {
	var first string
	var owner [SlotCount]uint8
	for i, n := range c.nodes {
		info, err := redisproc.CommandString(ctx, n.addr, "CLUSTER", "INFO")
		if err != nil {
			return fmt.Errorf("%s: CLUSTER INFO: %w", n.addr, err)
		}
		for field, want := range map[string]string{
			"cluster_state":          "ok",
			"cluster_slots_ok":       strconv.Itoa(SlotCount),
			"cluster_known_nodes":    strconv.Itoa(clusterMasters),
			"cluster_size":           strconv.Itoa(clusterMasters),
			"cluster_slots_assigned": strconv.Itoa(SlotCount),
		} {
			if got, _ := redisproc.InfoField(info, field); got != want {
				return fmt.Errorf("%s: %s is %q, want %q", n.addr, field, got, want)
			}
		}
		reply, err := redisproc.Command(ctx, n.addr, "CLUSTER", "SLOTS")
		if err != nil {
			return fmt.Errorf("%s: CLUSTER SLOTS: %w", n.addr, err)
		}
		view, err := c.parseSlots(reply, &owner)
		if err != nil {
			return fmt.Errorf("%s: CLUSTER SLOTS: %w", n.addr, err)
		}
		if i == 0 {
			first = view
		} else if view != first {
			return fmt.Errorf("%s sees slots %s but %s sees %s", n.addr, view, c.nodes[0].addr, first)
		}
	}
	c.owner = owner
	return nil
}

// parseSlots reads a CLUSTER SLOTS reply into owner and returns a canonical
// description of it for comparison. It fails unless the reply assigns every
// slot to one of c's nodes at 127.0.0.1 and every node has slots.
func (c *ClusterServers) parseSlots(reply any, owner *[SlotCount]uint8) (string, error) {
	ranges, ok := reply.([]any)
	if !ok {
		return "", fmt.Errorf("unexpected reply %v", reply)
	}
	var desc []string
	covered := 0
	used := make([]bool, len(c.nodes))
	for _, r := range ranges {
		fields, _ := r.([]any)
		if len(fields) < 3 {
			return "", fmt.Errorf("unexpected slot range %v", r)
		}
		start, ok1 := fields[0].(int64)
		end, ok2 := fields[1].(int64)
		master, _ := fields[2].([]any)
		if !ok1 || !ok2 || start < 0 || end < start || end >= SlotCount || len(master) < 2 {
			return "", fmt.Errorf("unexpected slot range %v", r)
		}
		ip, _ := master[0].(string)
		port, _ := master[1].(int64)
		idx := slices.IndexFunc(c.nodes, func(n *Server) bool { return int64(n.port) == port })
		if ip != "127.0.0.1" || idx < 0 {
			return "", fmt.Errorf("slots %d-%d served by unknown node %v:%v", start, end, ip, port)
		}
		if len(fields) > 3 {
			return "", fmt.Errorf("slots %d-%d have replicas", start, end)
		}
		for slot := start; slot <= end; slot++ {
			owner[slot] = uint8(idx)
		}
		covered += int(end - start + 1)
		used[idx] = true
		desc = append(desc, fmt.Sprintf("%d-%d@%d", start, end, port))
	}
	if covered != SlotCount || slices.Contains(used, false) {
		return "", fmt.Errorf("incomplete assignment %v", desc)
	}
	slices.Sort(desc)
	return strings.Join(desc, ","), nil
}

// Addrs returns the nodes' addresses ("127.0.0.1:port").
func (c *ClusterServers) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.addr
	}
	return addrs
}

// Nodes returns the three master nodes, in the order of Addrs.
func (c *ClusterServers) Nodes() []*Server {
	return slices.Clone(c.nodes)
}

// NodeForSlot returns the node that owned slot (0 to SlotCount-1) when the
// cluster was formed; slot is taken modulo SlotCount.
func (c *ClusterServers) NodeForSlot(slot uint16) *Server {
	return c.nodes[c.owner[slot%SlotCount]]
}

// NodeForKey returns the node that owned key's slot (see Slot) when the
// cluster was formed.
func (c *ClusterServers) NodeForKey(key string) *Server {
	return c.NodeForSlot(keys.Slot(key))
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
