package doctor

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"
)

// Bounds on how long doctor spends on one node.
const (
	doctorDialTimeout = 3 * time.Second
	doctorNodeTimeout = 10 * time.Second
	// doctorClockSamples is how many TIME round trips the clock check
	// makes; the shortest bounds the skew best.
	doctorClockSamples = 3
)

// doctorConfigParams are the parameters doctor reads with CONFIG GET, one
// per call (Redis 6 takes only one).
var doctorConfigParams = []string{
	"maxmemory-policy", "maxmemory", "save", "appendonly", "appendfsync",
	"busy-reply-threshold", "lua-time-limit", "min-replicas-to-write", "min-replicas-max-lag",
	"cluster-require-full-coverage",
}

// doctorCommands are the commands whose presence doctor asks COMMAND INFO
// about: a managed server may have renamed or removed them.
var doctorCommands = []string{"publish", "subscribe", "spublish", "ssubscribe", "wait", "evalsha", "eval"}

// doctorNode is what doctor read from one node. Reading is separate from
// judging (the checks in checks.go), so that the checks can be
// tested on made-up nodes.
type doctorNode struct {
	addr string
	// Set from CLUSTER NODES when the node was found there.
	clusterRole   string // "master" or "replica"
	clusterMaster string // a replica's master's address
	clusterFlags  []string

	connErr error // the node could not be reached; nothing else is set

	info            map[string]string // INFO, every default section
	infoErr         error
	config          map[string]string // what CONFIG GET returned, by parameter
	configErr       error
	clusterInfo     map[string]string // CLUSTER INFO, on a cluster node
	clusterInfoErr  error
	slotted         bool                // cluster-enabled, CLUSTER refused: slots enforced behind one address
	clusterNodes    []doctorClusterNode // CLUSTER NODES, on a cluster node
	clusterNodesErr error
	commands        map[string]bool // which of doctorCommands the server knows
	commandsErr     error
	skew, rtt       time.Duration // server clock minus this host's, and the round trip it was read in
	timeErr         error
	whoami          string
	whoamiErr       error
	acl             aclResult
}

// doctorClusterNode is one line of CLUSTER NODES.
type doctorClusterNode struct {
	id, addr, master string // master: the master's id, "-" for a master
	flags            []string
	slots            int // slots this node serves (ranges counted)
}

// has reports whether the node's flags include flag.
func (n doctorClusterNode) has(flag string) bool { return slices.Contains(n.flags, flag) }

// isCluster reports whether INFO says the node runs in cluster mode.
func (n *doctorNode) isCluster() bool { return n.info["cluster_enabled"] == "1" }

// clientCluster reports whether clients run the node as a cluster: it is
// cluster-enabled and answers CLUSTER. A cluster-enabled node that refuses
// CLUSTER (a managed service's endpoint, a proxy, a renamed command) is a
// standalone server to rueidis and Redisson, which still enforces slots.
func (n *doctorNode) clientCluster() bool { return n.isCluster() && !n.slotted }

// mode returns the server's mode from INFO: "standalone", "cluster" or
// "sentinel". Valkey 8 and later call the field server_mode.
func (n *doctorNode) mode() string {
	if m := n.info["server_mode"]; m != "" {
		return m
	}
	return n.info["redis_mode"]
}

// server returns "valkey" or "redis", and the version.
func (n *doctorNode) server() (name, version string) {
	if v := n.info["valkey_version"]; v != "" || n.info["server_name"] == "valkey" {
		if v == "" {
			v = n.info["redis_version"]
		}
		return "valkey", v
	}
	if v := n.info["redis_version"]; v != "" {
		return "redis", v
	}
	return "", ""
}

// major returns the major version of the server, 0 when unknown. Valkey 7
// and 8 have everything Redis 7 has.
func (n *doctorNode) major() int {
	_, v := n.server()
	m, _ := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
	return m
}

// role returns "master", "replica" or "" when unknown.
func (n *doctorNode) role() string {
	switch n.info["role"] {
	case "master":
		return "master"
	case "slave":
		return "replica"
	}
	return n.clusterRole
}

// param returns a CONFIG parameter, or INFO's field as a fallback when
// info is not "".
func (n *doctorNode) param(name, info string) (string, bool) {
	if v, ok := n.config[name]; ok {
		return v, true
	}
	if info != "" {
		if v, ok := n.info[info]; ok {
			return v, true
		}
	}
	return "", false
}

// shardedPubSub reports whether the server has sharded pub/sub: COMMAND
// INFO says so, or, when it could not be asked, the version does.
func (n *doctorNode) shardedPubSub() bool {
	if n.commands != nil {
		return n.commands["ssubscribe"] && n.commands["spublish"]
	}
	return n.major() >= 7
}

// probe reads everything the checks need from the node at addr; what
// fails is recorded, never returned.
func (d *doctor) probe(ctx context.Context, addr string) *doctorNode {
	n := &doctorNode{addr: addr}
	rc, err := d.dial(addr)
	if err != nil {
		n.connErr = err
		return n
	}
	defer rc.Close()
	ctx, cancel := context.WithTimeout(ctx, doctorNodeTimeout)
	defer cancel()

	var s string
	s, n.infoErr = rc.Do(ctx, rc.B().Info().Build()).ToString()
	if n.infoErr == nil {
		n.info = parseInfo(s)
	}
	n.config, n.configErr = readConfig(ctx, rc)
	switch {
	case n.isCluster():
		s, n.clusterInfoErr = rc.Do(ctx, rc.B().ClusterInfo().Build()).ToString()
		if n.clusterInfoErr == nil {
			n.clusterInfo = parseInfo(s)
		}
		// Refused, as it is behind one address: rueidis then runs the
		// node as a standalone server, as Redisson does.
		n.slotted = n.clusterInfoErr != nil && redisconn.IsErrorReply(n.clusterInfoErr)
	case n.infoErr != nil:
		// INFO refused: CLUSTER INFO may still tell a cluster node. Its
		// refusal is not reported, as the node may be none.
		if s, err := rc.Do(ctx, rc.B().ClusterInfo().Build()).ToString(); err == nil {
			n.clusterInfo = parseInfo(s)
			n.info = map[string]string{"cluster_enabled": "1"}
		}
	}
	if n.clientCluster() {
		s, n.clusterNodesErr = rc.Do(ctx, rc.B().ClusterNodes().Build()).ToString()
		if n.clusterNodesErr == nil {
			n.clusterNodes = parseClusterNodes(s)
		}
	}
	n.commands, n.commandsErr = readCommands(ctx, rc)
	n.skew, n.rtt, n.timeErr = readClock(ctx, rc)

	n.whoami, n.whoamiErr = rc.Do(ctx, rc.B().AclWhoami().Build()).ToString()
	user, self := d.aclUser, true
	switch {
	case user != "" && n.whoamiErr == nil:
		self = user == n.whoami
	case user != "":
		self = user == d.connectedUser()
	case n.whoamiErr == nil:
		user = n.whoami
	default:
		user = d.connectedUser()
	}
	groups := aclGroups(d.name, n.clientCluster(), n.clientCluster() && n.shardedPubSub())
	n.acl = checkACL(ctx, rc, user, self, groups)
	return n
}

// dial connects to one node only, with the credentials and TLS settings
// of --redis, without client-side caching (which needs a permission of
// its own) and without retries.
func (d *doctor) dial(addr string) (rueidis.Client, error) {
	o := d.opt
	o.InitAddress = []string{addr}
	o.ForceSingleClient = true
	o.DisableCache = true
	o.DisableRetry = true
	o.Dialer.Timeout = doctorDialTimeout
	if o.ConnWriteTimeout == 0 {
		o.ConnWriteTimeout = doctorDialTimeout
	}
	if o.TLSConfig != nil {
		o.TLSConfig = o.TLSConfig.Clone()
	}
	return rueidis.NewClient(o)
}

// connectedUser is the user --redis logs in as.
func (d *doctor) connectedUser() string {
	if d.opt.Username != "" {
		return d.opt.Username
	}
	return "default"
}

// readConfig reads doctorConfigParams. It stops at the first refusal,
// returning what it read and the error.
func readConfig(ctx context.Context, rc rueidis.Client) (map[string]string, error) {
	cmds := make(rueidis.Commands, len(doctorConfigParams))
	for i, p := range doctorConfigParams {
		cmds[i] = rc.B().ConfigGet().Parameter(p).Build()
	}
	out := map[string]string{}
	for _, r := range rc.DoMulti(ctx, cmds...) {
		m, err := r.AsStrMap()
		if err != nil {
			return out, err
		}
		for k, v := range m {
			out[k] = v
		}
	}
	return out, nil
}

// readCommands asks COMMAND INFO which of doctorCommands the server knows.
func readCommands(ctx context.Context, rc rueidis.Client) (map[string]bool, error) {
	arr, err := rc.Do(ctx, rc.B().CommandInfo().CommandName(doctorCommands...).Build()).ToArray()
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for i, e := range arr {
		if i < len(doctorCommands) {
			out[doctorCommands[i]] = !e.IsNil()
		}
	}
	return out, nil
}

// readClock compares the server's TIME with this host's clock, taken
// halfway through the round trip; the shortest of a few round trips wins.
func readClock(ctx context.Context, rc rueidis.Client) (skew, rtt time.Duration, err error) {
	rtt = -1
	for range doctorClockSamples {
		t0 := time.Now()
		v, err := rc.Do(ctx, rc.B().Time().Build()).AsStrSlice()
		t1 := time.Now()
		if err != nil {
			return 0, 0, err
		}
		if len(v) != 2 {
			return 0, 0, errUnexpected("TIME", v)
		}
		sec, err1 := strconv.ParseInt(v[0], 10, 64)
		usec, err2 := strconv.ParseInt(v[1], 10, 64)
		if err1 != nil || err2 != nil {
			return 0, 0, errUnexpected("TIME", v)
		}
		server := time.Unix(sec, usec*1000)
		if d := t1.Sub(t0); rtt < 0 || d < rtt {
			rtt = d
			skew = server.Sub(t0.Add(d / 2))
		}
	}
	return skew, rtt, nil
}

// parseInfo parses INFO (or CLUSTER INFO) text into its fields.
func parseInfo(s string) map[string]string {
	out := map[string]string{}
	s = strings.TrimPrefix(s, "txt:") // a RESP3 verbatim string's format
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.TrimRight(line, "\r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}

// parseInfoList parses an INFO value of the form k1=v1,k2=v2 (a replica's
// line, slave0:ip=...,port=...).
func parseInfoList(s string) map[string]string {
	out := map[string]string{}
	for part := range strings.SplitSeq(s, ",") {
		if k, v, ok := strings.Cut(part, "="); ok {
			out[k] = v
		}
	}
	return out
}

// parseClusterNodes parses CLUSTER NODES. Addresses lose their cluster
// bus port and hostname ("127.0.0.1:7000@17000,host" is 127.0.0.1:7000).
func parseClusterNodes(s string) []doctorClusterNode {
	var out []doctorClusterNode
	s = strings.TrimPrefix(s, "txt:") // a RESP3 verbatim string's format
	for line := range strings.SplitSeq(s, "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		addr, _, _ = strings.Cut(addr, ",")
		n := doctorClusterNode{id: f[0], addr: addr, master: f[3], flags: strings.Split(f[2], ",")}
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") {
				continue // a slot being imported or migrated
			}
			lo, hi, isRange := strings.Cut(r, "-")
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			switch {
			case !isRange && err1 == nil:
				n.slots++
			case isRange && err1 == nil && err2 == nil && b >= a:
				n.slots += b - a + 1
			}
		}
		out = append(out, n)
	}
	return out
}

// doctorNoPerm reports whether err is an ACL refusal.
func doctorNoPerm(err error) bool {
	return redisconn.IsErrorReply(err) && strings.HasPrefix(err.Error(), "NOPERM")
}

// errUnexpected describes a reply doctor cannot read.
func errUnexpected(cmd string, reply any) error {
	return fmt.Errorf("unexpected reply to %s: %q", cmd, reply)
}
