package doctor

import (
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/script"
)

// doctorACLScript asks the server, without running anything, whether the
// connected user may run a list of commands (redis.acl_check_cmd, Redis 7+).
//
//go:embed acl.lua
var doctorACLScript string

// doctorACLSHA is doctorACLScript's SHA-1, as EVALSHA takes it.
var doctorACLSHA = func() string {
	sum := sha1.Sum([]byte(doctorACLScript))
	return hex.EncodeToString(sum[:])
}()

// aclProbe is one command a kind sends, with the keys and channels of a
// name, as the ACL check asks about it.
type aclProbe struct {
	args []string
	// optional, when set, says when the command is needed; the kind works
	// without it otherwise.
	optional string
}

// aclGroup is what one kind (or the connection itself) needs.
type aclGroup struct {
	name   string // "connection", "reentrant", "fair", ...
	probes []aclProbe
}

// Placeholders for the ids that keys and channels carry: a request id and
// an owner (<client id>:<owner id>).
const (
	aclRequestID = "00000000000000000000000000000000"
	aclOwner     = "00000000-0000-0000-0000-000000000000:1"
	aclSHA       = "0000000000000000000000000000000000000000"
	aclClientID  = "00000000-0000-0000-0000-000000000000"
)

// aclGroups returns what each kind needs for locks called name, as the
// Minimal ACL section of docs/operations.md lists it. cluster adds the
// topology commands; sharded means that waiters use sharded pub/sub
// (PubSubAuto on a Redis 7+ cluster), classic pub/sub otherwise.
func aclGroups(name string, cluster, sharded bool) []aclGroup {
	p := func(args ...string) aclProbe { return aclProbe{args: args} }
	opt := func(when string, args ...string) aclProbe { return aclProbe{args: args, optional: when} }
	// pubsub: a release announced on channel, and a waiter on it.
	pubsub := func(channel string) []aclProbe {
		classic := []aclProbe{p("PUBLISH", channel, "0"), p("SUBSCRIBE", channel), p("UNSUBSCRIBE", channel)}
		if !sharded {
			return classic
		}
		const when = "only with WithPubSubMode(PubSubClassic)"
		for i := range classic {
			classic[i].optional = when
		}
		return append(classic, p("SPUBLISH", channel, "0"), p("SSUBSCRIBE", channel), p("SUNSUBSCRIBE", channel))
	}
	script := func(keys ...string) []aclProbe {
		n := strconv.Itoa(len(keys))
		return []aclProbe{
			p(append([]string{"EVALSHA", aclSHA, n}, keys...)...),
			p(append([]string{"EVAL", "return 0", n}, keys...)...),
		}
	}
	join := func(parts ...[]aclProbe) []aclProbe {
		var out []aclProbe
		for _, part := range parts {
			out = append(out, part...)
		}
		return out
	}

	conn := []aclProbe{p("HELLO", "3"), p("PING"),
		opt("only with rueidis's client-side caching (not with ClientOption.DisableCache)", "CLIENT", "TRACKING", "ON", "OPTIN")}
	if cluster {
		conn = append(conn, p("CLUSTER", "SLOTS"),
			opt("only with rueidis's ClusterOption.PreferClusterShards", "CLUSTER", "SHARDS"))
		if sharded {
			conn = append(conn, opt("only with PubSubAuto, which probes the cluster once", "PUBSUB", "SHARDNUMSUB", keys.LockChannel(name)))
		}
	}

	lockChan := keys.LockChannel(name)
	latch := keys.UnlockLatch(name, aclRequestID)
	reentrant := join(script(name, lockChan, latch), []aclProbe{
		p("EXISTS", name), p("HEXISTS", name, aclOwner), p("HGET", name, aclOwner),
		p("HINCRBY", name, aclOwner, "1"), p("HSET", name, aclOwner, "1"),
		p("PEXPIRE", name, "30000"), p("PTTL", name),
		p("GET", latch), p("SET", latch, "1", "PX", "1000"), p("DEL", latch),
	}, pubsub(lockChan))

	queue, deadlines := keys.Prefix(keys.FairQueuePrefix, name), keys.Prefix(keys.FairTimeoutPrefix, name)
	fair := join(script(name, queue, deadlines, lockChan, latch), []aclProbe{
		p("LINDEX", queue, "0"), p("LPOP", queue), p("LRANGE", queue, "0", "-1"),
		p("LREM", queue, "0", aclOwner), p("RPUSH", queue, aclOwner),
		p("ZADD", deadlines, "1", aclOwner), p("ZINCRBY", deadlines, "1", aclOwner),
		p("ZRANGE", deadlines, "0", "-1"), p("ZREM", deadlines, aclOwner), p("ZSCORE", deadlines, aclOwner),
	}, pubsub(lockChan+":"+aclOwner))

	rwChan := keys.Prefix(keys.ReadWriteChannelPrefix, name)
	readTimeouts := keys.Suffix(name, aclOwner+":"+keys.ReadTimeoutSuffix)
	keyPrefix := strings.TrimSuffix(keys.Suffix(name, "x"), ":x")
	readWrite := join(script(name, rwChan, readTimeouts, keyPrefix, latch), []aclProbe{
		p("HDEL", name, aclOwner), p("HKEYS", name), p("HLEN", name),
		p("SET", readTimeouts+":1", "1", "PX", "1000"),
	}, pubsub(rwChan))

	token := keys.Prefix(keys.FenceTokenPrefix, name)
	fenced := join(script(name, token), []aclProbe{p("INCR", token)})

	value, leaderChan := keys.LeaderValue(name), keys.LeaderChannel(name)
	election := join(script(name, token, value, lockChan, latch), []aclProbe{
		p("INCR", token), p("HKEYS", name),
		p("HSET", value, "owner", aclOwner), p("HGET", value, "owner"), p("HMGET", value, "owner", "token", "value"),
		p("PEXPIRE", value, "30000"), p("DEL", value),
	}, pubsub(leaderChan))

	semChan, receipt := keys.SemaphoreChannel(name), keys.Receipt(name, aclRequestID)
	semaphore := join(script(name, semChan, receipt), []aclProbe{
		p("INCRBY", name, "1"), p("DECRBY", name, "1"), p("TYPE", name),
		p("SET", receipt, "1", "PX", "30000"), p("DEL", receipt),
	}, pubsub(semChan))

	permits := keys.Suffix(name, keys.PermitsSuffix)
	expirable := join(script(name, semChan, permits, receipt), []aclProbe{
		p("INCRBY", name, "1"), p("DECRBY", name, "1"), p("TYPE", name),
		p("ZADD", permits, "1", aclRequestID), p("ZCOUNT", permits, "-inf", "+inf"),
		p("ZMSCORE", permits, aclRequestID), p("ZRANGE", permits, "0", "-1"),
		p("ZRANGEBYSCORE", permits, "-inf", "+inf"), p("ZREM", permits, aclRequestID),
		p("ZSCORE", permits, aclRequestID),
		p("SET", receipt, "1", "PX", "30000"), p("DEL", receipt),
	}, pubsub(semChan))

	latchChan := keys.LatchChannel(name)
	latchKind := join(script(name, latchChan, receipt), []aclProbe{
		p("DECR", name), p("TYPE", name),
		p("SET", receipt, "1", "PX", "30000"), p("DEL", receipt),
	}, pubsub(latchChan))

	rate := keys.RateLimiter(name, aclClientID)
	rateLimit := join(script(append(rate, receipt)...), []aclProbe{
		p("HMGET", name, "rate", "interval", "type"), p("HSETNX", name, "rate", "1"), p("HGETALL", name),
		p("DECRBY", rate[1], "1"), p("ZADD", rate[3], "1", aclRequestID), p("ZRANGE", rate[3], "0", "0"),
		p("ZRANGEBYSCORE", rate[3], "0", "1"), p("ZREMRANGEBYSCORE", rate[3], "0", "1"),
		opt("only to take back an acquisition whose reply was lost", "ZREM", rate[3], aclRequestID),
		p("SET", receipt, "1", "PX", "30000"), p("DEL", receipt),
	})

	return []aclGroup{
		{name: "connection", probes: conn},
		{name: "reentrant", probes: reentrant},
		{name: "fair", probes: fair},
		{name: "read-write", probes: readWrite},
		{name: "fenced", probes: fenced},
		{name: "election", probes: election},
		{name: "semaphore", probes: semaphore},
		{name: "expirable-semaphore", probes: expirable},
		{name: "latch", probes: latchKind},
		{name: "ratelimit", probes: rateLimit},
		{name: "replica-acks", probes: []aclProbe{
			opt("only with WithReplicaAcks or WithReplicaSync", "WAIT", "1", "0"),
			opt("only with WithReplicaSync", "INFO", "replication"),
			opt("only with WithReplicaSync on a master with AOF on; refused, WAIT is sent instead", "WAITAOF", "1", "0", "0"),
		}},
	}
}

// aclKinds are the groups a lock kind needs besides its own: the
// connection's, and the reentrant lock's, which the Minimal ACL's first
// line gives every kind.
var aclKinds = map[string][]string{
	"reentrant":           {"connection"},
	"fair":                {"connection", "reentrant"},
	"read-write":          {"connection", "reentrant"},
	"fenced":              {"connection", "reentrant"},
	"election":            {"connection", "reentrant"},
	"semaphore":           {"connection", "reentrant"},
	"expirable-semaphore": {"connection", "reentrant"},
	"latch":               {"connection", "reentrant"},
	"ratelimit":           {"connection", "reentrant"},
}

// Probe verdicts.
const (
	aclAllowed = 1
	aclDenied  = 0
	aclUnknown = -1 // the server does not know the command
)

// errNoACLCheck says why the ACL check is skipped on a server before Redis 7,
// which has no way to ask about a command without running it.
var errNoACLCheck = errors.New("this server has neither redis.acl_check_cmd nor ACL DRYRUN (Redis 7.0) to check permissions with")

// aclResult is what the ACL check found for one user on one node.
type aclResult struct {
	user   string
	method string // "acl_check_cmd" or "ACL DRYRUN"
	groups []aclGroup
	// verdicts are per group, per probe.
	verdicts [][]int
	// err is why nothing could be checked, when nothing was.
	err error
}

// checkACL asks the node whether user may run what each kind needs. self
// says that user is the connected user: the check then needs only EVAL
// (or EVALSHA), which every kind needs anyway; for another user it needs
// ACL DRYRUN, an admin command.
func checkACL(ctx context.Context, rc rueidis.Client, user string, self bool, groups []aclGroup) aclResult {
	res := aclResult{user: user, groups: groups}
	var flat []aclProbe
	for _, g := range groups {
		flat = append(flat, g.probes...)
	}
	var verdicts []int
	var err error
	if self {
		res.method = "acl_check_cmd"
		verdicts, err = aclCheckScript(ctx, rc, flat)
	}
	if !self || err != nil {
		scriptErr := err
		res.method = "ACL DRYRUN"
		verdicts, err = aclDryRun(ctx, rc, user, flat)
		if err != nil && scriptErr != nil {
			err = fmt.Errorf("%w; ACL DRYRUN: %w", scriptErr, err)
		}
	}
	if err != nil {
		res.err = err
		return res
	}
	for _, g := range groups {
		n := len(g.probes)
		res.verdicts = append(res.verdicts, verdicts[:n])
		verdicts = verdicts[n:]
	}
	return res
}

// aclCheckScript runs doctorACLScript (EVALSHA, EVAL when not cached).
func aclCheckScript(ctx context.Context, rc rueidis.Client, probes []aclProbe) ([]int, error) {
	var argv []string
	for _, p := range probes {
		argv = append(argv, strconv.Itoa(len(p.args)))
		argv = append(argv, p.args...)
	}
	out, err := rc.Do(ctx, rc.B().Evalsha().Sha1(doctorACLSHA).Numkeys(0).Arg(argv...).Build()).AsIntSlice()
	if script.IsNoScript(err) {
		out, err = rc.Do(ctx, rc.B().Eval().Script(doctorACLScript).Numkeys(0).Arg(argv...).Build()).AsIntSlice()
	}
	if err != nil {
		return nil, fmt.Errorf("redis.acl_check_cmd: %w", err)
	}
	if len(out) != len(probes) {
		return nil, fmt.Errorf("redis.acl_check_cmd: %d answers to %d questions", len(out), len(probes))
	}
	v := make([]int, len(out))
	for i, x := range out {
		v[i] = int(x)
	}
	return v, nil
}

// aclDryRun asks ACL DRYRUN user about each probe, in one pipeline.
func aclDryRun(ctx context.Context, rc rueidis.Client, user string, probes []aclProbe) ([]int, error) {
	cmds := make(rueidis.Commands, len(probes))
	for i, p := range probes {
		cmds[i] = rc.B().Arbitrary("ACL", "DRYRUN", user).Args(p.args...).Build()
	}
	verdicts := make([]int, len(probes))
	for i, r := range rc.DoMulti(ctx, cmds...) {
		s, err := r.ToString()
		switch {
		case err == nil && s == "OK":
			verdicts[i] = aclAllowed
		case err == nil: // the reason it is refused
			verdicts[i] = aclDenied
		case redisconn.IsErrorReply(err) && strings.Contains(err.Error(), "Command '") && strings.HasSuffix(err.Error(), "not found"):
			// "[ERR] Command 'x' not found": unknown to this server.
			verdicts[i] = aclUnknown
		default:
			return nil, fmt.Errorf("ACL DRYRUN: %w", err)
		}
	}
	return verdicts, nil
}

// groupStatus sums up one group of an aclResult: the required probes
// refused, the optional ones refused, and whether the server knew them
// all.
func (r aclResult) groupStatus(i int) (denied, optionalDenied []aclProbe, unknown bool) {
	for j, p := range r.groups[i].probes {
		switch r.verdicts[i][j] {
		case aclDenied:
			if p.optional != "" {
				optionalDenied = append(optionalDenied, p)
			} else {
				denied = append(denied, p)
			}
		case aclUnknown:
			unknown = true
		}
	}
	return denied, optionalDenied, unknown
}

// String returns the probe as a command line.
func (p aclProbe) String() string { return strings.Join(p.args, " ") }

// describeProbes says briefly what probes were refused: scripts, then the
// commands on each key or channel, in order, with placeholders for ids.
func describeProbes(probes []aclProbe) string {
	var targets []string
	cmds := map[string][]string{}
	for _, p := range probes {
		cmd, target := p.args[0], ""
		switch {
		case cmd == "EVALSHA" || cmd == "EVAL":
			target = "its scripts' keys"
		case slices.Contains([]string{"PUBLISH", "SUBSCRIBE", "UNSUBSCRIBE", "SPUBLISH", "SSUBSCRIBE", "SUNSUBSCRIBE"}, cmd):
			target = "channel " + p.args[1]
		case cmd == "CLIENT" || cmd == "CLUSTER" || cmd == "PUBSUB":
			cmd = cmd + "|" + strings.ToLower(p.args[1])
		case len(p.args) > 1 && cmd != "HELLO" && cmd != "WAIT" && cmd != "WAITAOF" && cmd != "INFO":
			target = p.args[1]
		}
		if _, ok := cmds[target]; !ok {
			targets = append(targets, target)
		}
		if !slices.Contains(cmds[target], cmd) {
			cmds[target] = append(cmds[target], cmd)
		}
	}
	parts := make([]string, 0, len(targets))
	for _, t := range targets {
		part := strings.Join(cmds[t], ", ")
		if t != "" {
			part += " on " + t
		}
		parts = append(parts, part)
	}
	out := strings.Join(parts, "; ")
	out = strings.ReplaceAll(out, aclOwner, "<owner>")
	return strings.ReplaceAll(out, aclRequestID, "<id>")
}

// describeOptional lists refused optional probes with when each matters.
func describeOptional(probes []aclProbe) string {
	parts := make([]string, len(probes))
	for i, p := range probes {
		parts[i] = describeProbes([]aclProbe{p}) + " (" + p.optional + ")"
	}
	return strings.Join(parts, "; ")
}
