//go:build unix

package doctor

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/cmd/interlock/internal/clitest"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/internal/redistest"
)

// runDoctor runs doctor --json with args and returns the exit code and
// the parsed report.
func runDoctor(t *testing.T, args ...string) (int, doctorReport) {
	t.Helper()
	res := clitest.Run(t, Command, append([]string{"--json"}, args...)...)
	var rep doctorReport
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &rep), "stdout: %s\nstderr: %s", res.Stdout, res.Stderr)
	assert.Equal(t, res.Code, rep.ExitStatus, "exit_status is the exit code")
	assert.Empty(t, res.Stderr)
	return res.Code, rep
}

// finding returns the finding of check about node ("" for the
// deployment's); the test fails if there is none.
func (rep doctorReport) finding(t *testing.T, check, node string) doctorFinding {
	t.Helper()
	for _, f := range rep.Findings {
		if f.Check == check && f.Node == node {
			return f
		}
	}
	require.Failf(t, "no finding", "no %s finding for node %q in %+v", check, node, rep.Findings)
	return doctorFinding{}
}

// An evicting maxmemory-policy is a hazard, explained, with a non-zero
// exit; noeviction is fine.
func TestDoctorEvictionHazard(t *testing.T) {
	t.Parallel()
	s := redistest.Standalone(t, "--maxmemory-policy", "allkeys-lru", "--maxmemory", "100mb",
		"--appendonly", "yes", "--appendfsync", "always")
	url := "redis://" + s.Addr()
	code, rep := runDoctor(t, "--redis", url)
	assert.Equal(t, exit.Hazard, code)
	assert.Equal(t, sevHazard, rep.Worst)
	f := rep.finding(t, "maxmemory-policy", s.Addr())
	assert.Equal(t, sevHazard, f.Severity)
	assert.Contains(t, f.Summary, "allkeys-lru")
	assert.Contains(t, f.Meaning, "another client acquires it")
	assert.Contains(t, f.Action, "noeviction")
	assert.Equal(t, "allkeys-lru", f.Facts["policy"])
	assert.EqualValues(t, 100<<20, f.Facts["maxmemory"])

	res := clitest.Run(t, Command, "--redis", url)
	assert.Equal(t, exit.Hazard, res.Code)
	assert.Regexp(t, `(?m)^  hazard  maxmemory-policy: allkeys-lru`, res.Stdout)
	assert.Contains(t, res.Stdout, "Worst finding: hazard; exit status 2.")
	for line := range strings.Lines(res.Stdout) {
		assert.LessOrEqual(t, len(strings.TrimRight(line, "\n")), doctorWidth, "wrapped: %q", line)
	}

	admin := s.Client(t)
	require.NoError(t, admin.Do(t.Context(), admin.B().ConfigSet().ParameterValue().ParameterValue("maxmemory-policy", "volatile-ttl").Build()).Error())
	code, rep = runDoctor(t, "--redis", url)
	assert.Equal(t, exit.Hazard, code)
	f = rep.finding(t, "maxmemory-policy", s.Addr())
	assert.Equal(t, sevHazard, f.Severity)
	assert.Contains(t, f.Meaning, "every held lock has one")

	require.NoError(t, admin.Do(t.Context(), admin.B().ConfigSet().ParameterValue().ParameterValue("maxmemory-policy", "noeviction").Build()).Error())
	code, rep = runDoctor(t, "--redis", url)
	assert.Equal(t, exit.OK, code, "%+v", rep.Findings)
	assert.Equal(t, sevOK, rep.finding(t, "maxmemory-policy", s.Addr()).Severity)
	assert.Equal(t, sevOK, rep.finding(t, "persistence", s.Addr()).Severity, "AOF, fsync always")
}

// A server configured as Redis's defaults are (RDB save points, no AOF,
// noeviction) gets a plain report and exit 0; one without persistence, as
// the test servers run, a warning.
func TestDoctorPersistence(t *testing.T) {
	t.Parallel()
	// One pair per --save, unquoted: Redis 6 reads no more than one pair
	// from a --save argument.
	defaults := redistest.Standalone(t, "--save", "3600", "1", "--save", "300", "100", "--save", "60", "10000")
	res := clitest.Run(t, Command, "--redis", "redis://"+defaults.Addr())
	assert.Equal(t, exit.OK, res.Code, res.Stdout+res.Stderr)
	text := strings.Join(strings.Fields(res.Stdout), " ")
	assert.Contains(t, text, " ok maxmemory-policy: noeviction, maxmemory 0 (no limit): lock keys are never evicted ")
	assert.Contains(t, text, " info persistence: no AOF; RDB snapshots (save 3600 1 300 100 60 10000) A restart brings back the last snapshot")
	assert.Contains(t, text, " ok replication: no replicas ")
	if redistest.FeaturesAt(t, defaults.Addr()).ACLCheck() {
		assert.Contains(t, text, " ok acl: user default may use every kind")
	}
	assert.Contains(t, text, "Worst finding: info; exit status 0.")
	_, defaultRep := runDoctor(t, "--redis", "redis://"+defaults.Addr())
	assert.Equal(t, "no AOF; RDB snapshots (save 3600 1 300 100 60 10000)", defaultRep.finding(t, "persistence", defaults.Addr()).Summary)

	code, rep := runDoctor(t, "--redis", clitest.RedisURL()) // the shared server: --save "" --appendonly no
	assert.Equal(t, exit.Failure, code)
	assert.Equal(t, sevWarn, rep.Worst)
	f := rep.finding(t, "persistence", clitest.Addr())
	assert.Equal(t, sevWarn, f.Severity)
	assert.Contains(t, f.Summary, "persistence off")
	assert.Contains(t, f.Meaning, "fencing token counters restart at 0")
	assert.Equal(t, "standalone", rep.Deployment)
	require.Len(t, rep.Nodes, 1)
	assert.Equal(t, doctorNodeInfo{Addr: clitest.Addr(), Role: "master", Server: "redis", Version: rep.Nodes[0].Version, Reachable: true}, rep.Nodes[0])
	clock := rep.finding(t, "clock", clitest.Addr())
	assert.Equal(t, sevOK, clock.Severity, "same host, same clock: %s", clock.Summary)
	assert.Less(t, clock.Facts["skew_ms"], 100.0)
	assert.Greater(t, clock.Facts["skew_ms"], -100.0)
}

// A master with an asynchronous replica is a failover hazard, with the
// replica's lag; --wait-replicas makes it a warning. The replica reports
// its link.
func TestDoctorReplicaHazard(t *testing.T) {
	t.Parallel()
	master, replica := redistest.Replicated(t)
	rc := master.Client(t)
	for range 50 {
		require.NoError(t, rc.Do(t.Context(), rc.B().Set().Key("doctor:lag").Value(strings.Repeat("x", 1000)).Build()).Error())
	}
	code, rep := runDoctor(t, "--redis", "redis://"+master.Addr())
	assert.Equal(t, exit.Hazard, code)
	f := rep.finding(t, "replication", master.Addr())
	assert.Equal(t, sevHazard, f.Severity)
	assert.Contains(t, f.Summary, "1 replica under asynchronous replication, replication lag ")
	assert.Contains(t, f.Summary, replica.Addr()+" online")
	assert.Contains(t, f.Meaning, "two holders")
	assert.Contains(t, f.Action, "WithReplicaAcks")
	assert.Contains(t, f.Action, "WithReplicaSync")
	assert.Contains(t, f.Action, "checkLockSyncedSlaves")
	reps, ok := f.Facts["replicas"].([]any)
	require.True(t, ok, "%#v", f.Facts["replicas"])
	require.Len(t, reps, 1)
	r := reps[0].(map[string]any)
	assert.Equal(t, replica.Addr(), r["addr"])
	assert.GreaterOrEqual(t, r["lag_bytes"], 0.0)
	t.Logf("replication: %s", f.Summary)

	code, rep = runDoctor(t, "--redis", "redis://"+master.Addr(), "--wait-replicas")
	assert.Equal(t, exit.Failure, code, "the warnings left: replication, persistence")
	assert.Equal(t, sevWarn, rep.finding(t, "replication", master.Addr()).Severity)

	code, rep = runDoctor(t, "--redis", "redis://"+replica.Addr())
	f = rep.finding(t, "replication", replica.Addr())
	assert.Equal(t, sevOK, f.Severity)
	assert.Equal(t, "replica of "+master.Addr()+", link up", f.Summary)
	assert.Equal(t, exit.Failure, code, "persistence off")
	assert.Equal(t, master.Addr(), rep.Nodes[0].Master)

	// Promoted, the replica shows the failover.
	rrc := replica.Client(t)
	require.NoError(t, rrc.Do(t.Context(), rrc.B().Replicaof().No().One().Build()).Error())
	_, rep = runDoctor(t, "--redis", "redis://"+replica.Addr())
	f = rep.finding(t, "failover", replica.Addr())
	assert.Equal(t, sevInfo, f.Severity)
	assert.Contains(t, f.Summary, "promoted from a replica at replication offset ")
	assert.Equal(t, "master", rep.Nodes[0].Role)
}

// minimalACL reads the Minimal ACL of docs/operations.md for names
// "app:*": its first line (every kind's), then each kind's, without the
// user's name, "on" and password.
func minimalACL(t *testing.T) [][]string {
	t.Helper()
	doc, err := os.ReadFile("../../../../docs/operations.md")
	require.NoError(t, err)
	var lines [][]string
	for line := range strings.Lines(string(doc)) {
		rules, ok := strings.CutPrefix(strings.TrimSpace(line), "ACL SETUSER locker ")
		if !ok {
			continue
		}
		var keep []string
		for _, r := range strings.Fields(rules) {
			if r != "on" && !strings.HasPrefix(r, ">") {
				keep = append(keep, r)
			}
		}
		lines = append(lines, keep)
	}
	require.Len(t, lines, 9, "the first line and eight kinds' lines")
	require.Equal(t, "resetkeys", lines[0][0])
	return lines
}

// A user refused CONFIG still gets a report: INFO stands in where it can,
// and what could not be checked is said. The ACL check agrees with the
// documented Minimal ACL, by acl_check_cmd as the user and by ACL DRYRUN
// as an admin.
func TestDoctorRestrictedUser(t *testing.T) {
	t.Parallel()
	s := redistest.Standalone(t)
	feat := redistest.FeaturesAt(t, s.Addr())
	redistest.RequireFeature(t, feat, feat.ACLCheck(), "ACL DRYRUN or redis.acl_check_cmd, which the ACL check needs (TestDoctorVersionLimits covers it)")
	admin := s.Client(t)
	setUser := func(user string, rules ...[]string) {
		args := []string{"SETUSER", user, "reset", "on", ">pw"}
		for _, r := range rules {
			args = append(args, r...)
		}
		require.NoError(t, admin.Do(t.Context(), admin.B().Arbitrary("ACL").Args(args...).Build()).Error())
	}
	setUser("noconfig", []string{"allkeys", "allchannels", "+@all", "-config"})
	code, rep := runDoctor(t, "--redis", "redis://noconfig:pw@"+s.Addr(), "--name", "app:doctor")
	assert.Equal(t, exit.OK, code, "%+v", rep.Findings)
	access := rep.finding(t, "access", s.Addr())
	assert.Equal(t, sevInfo, access.Severity)
	assert.Contains(t, access.Summary, "refused CONFIG GET")
	policy := rep.finding(t, "maxmemory-policy", s.Addr())
	assert.Equal(t, sevOK, policy.Severity)
	assert.Equal(t, "INFO", policy.Facts["source"], "read from INFO memory")
	busy := rep.finding(t, "busy-reply-threshold", s.Addr())
	assert.Contains(t, busy.Summary, "not checked: CONFIG GET refused")
	assert.NotEmpty(t, busy.Skipped)
	persistence := rep.finding(t, "persistence", s.Addr())
	assert.Equal(t, "no AOF; RDB save points unknown", persistence.Summary)
	assert.NotEmpty(t, persistence.Skipped)
	res := clitest.Run(t, Command, "--redis", "redis://noconfig:pw@"+s.Addr())
	text := strings.Join(strings.Fields(res.Stdout), " ")
	assert.Contains(t, text, "info busy-reply-threshold: not checked: CONFIG GET refused (NOPERM); INFO does not show it")
	assert.Contains(t, text, "Refused: CONFIG GET: NOPERM this user has no permissions to run the 'config|get' command; read INFO instead")
	assert.Contains(t, text, "Not checked: persistence: RDB save points: CONFIG GET refused")

	// The reentrant lock's line only: INFO is refused too; reentrant locks
	// work, the other kinds do not.
	acls := minimalACL(t)
	setUser("rlock", acls[0])
	code, rep = runDoctor(t, "--redis", "redis://rlock:pw@"+s.Addr(), "--name", "app:doctor")
	assert.Equal(t, exit.Failure, code, "INFO refused: eviction and replication unknown")
	assert.Equal(t, sevWarn, rep.finding(t, "access", s.Addr()).Severity)
	assert.Equal(t, sevWarn, rep.finding(t, "maxmemory-policy", s.Addr()).Severity)
	acl := rep.finding(t, "acl", s.Addr())
	assert.Equal(t, sevInfo, acl.Severity, acl.Summary)
	assert.Equal(t, "rlock", acl.Facts["user"])
	assert.Equal(t, "acl_check_cmd", acl.Facts["method"])
	kinds := acl.Facts["kinds"].(map[string]any)
	assert.Equal(t, true, kinds["reentrant"].(map[string]any)["ok"])
	fair := kinds["fair"].(map[string]any)
	assert.Equal(t, false, fair["ok"])
	assert.Contains(t, fair["missing"], "RPUSH redisson_lock_queue:{app:doctor} "+aclOwner)
	assert.Equal(t, "user rlock may use reentrant; not fair, read-write, fenced, election, semaphore, expirable-semaphore, latch, ratelimit", acl.Summary)
	assert.Contains(t, acl.Meaning, "fair: EVALSHA, EVAL on its scripts' keys; LINDEX, LPOP, LRANGE, LREM, RPUSH on redisson_lock_queue:{app:doctor}; ZADD, ZINCRBY, ZRANGE, ZREM, ZSCORE on redisson_lock_timeout:{app:doctor}. read-write: ")
	assert.Contains(t, acl.Meaning, "Refused, but needed only in some setups: ZREM on {app:doctor}:permits (only to take back an acquisition whose reply was lost); WAIT (only with WithReplicaAcks or WithReplicaSync); INFO (only with WithReplicaSync).")

	// Every line: every kind works, checked as the user and by an admin.
	setUser("all", acls...)
	_, rep = runDoctor(t, "--redis", "redis://all:pw@"+s.Addr(), "--name", "app:doctor")
	acl = rep.finding(t, "acl", s.Addr())
	assert.Equal(t, sevOK, acl.Severity, acl.Summary)
	assert.Contains(t, acl.Summary, "user all may use every kind")
	_, rep = runDoctor(t, "--redis", "redis://"+s.Addr(), "--name", "app:doctor", "--acl-user", "all")
	byAdmin := rep.finding(t, "acl", s.Addr())
	assert.Equal(t, "ACL DRYRUN", byAdmin.Facts["method"])
	assert.Equal(t, acl.Facts["kinds"], byAdmin.Facts["kinds"])
	assert.Equal(t, acl.Summary, byAdmin.Summary)
	_, rep = runDoctor(t, "--redis", "redis://"+s.Addr(), "--acl-user", "rlock", "--name", "app:doctor")
	assert.Equal(t, kinds, rep.finding(t, "acl", s.Addr()).Facts["kinds"], "DRYRUN agrees with acl_check_cmd")

	_, rep = runDoctor(t, "--redis", "redis://"+s.Addr(), "--acl-user", "nobody")
	acl = rep.finding(t, "acl", s.Addr())
	assert.Equal(t, sevWarn, acl.Severity)
	assert.Equal(t, "user nobody does not exist on this node", acl.Summary)

	// Names the user may not touch: no kind works.
	_, rep = runDoctor(t, "--redis", "redis://all:pw@"+s.Addr())
	acl = rep.finding(t, "acl", s.Addr())
	assert.Equal(t, sevWarn, acl.Severity)
	assert.Contains(t, acl.Summary, "may use no kind")

	// No scripts: ACL DRYRUN tells what else is refused; without it
	// nothing more can be said.
	setUser("noscripts", []string{"allkeys", "allchannels", "+@all", "-evalsha", "-eval"})
	_, rep = runDoctor(t, "--redis", "redis://noscripts:pw@"+s.Addr(), "--name", "app:doctor")
	acl = rep.finding(t, "acl", s.Addr())
	assert.Equal(t, sevWarn, acl.Severity)
	assert.Equal(t, "ACL DRYRUN", acl.Facts["method"])
	assert.Contains(t, acl.Summary, "may use no kind")
	assert.Contains(t, acl.Facts["kinds"].(map[string]any)["latch"].(map[string]any)["missing"], "EVAL return 0 3 app:doctor redisson_countdownlatch__channel__{app:doctor} interlock_receipt:{app:doctor}:"+aclRequestID)
	setUser("noscripts", []string{"allkeys", "allchannels", "+@all", "-evalsha", "-eval", "-acl"})
	_, rep = runDoctor(t, "--redis", "redis://noscripts:pw@"+s.Addr())
	acl = rep.finding(t, "acl", s.Addr())
	assert.Equal(t, sevWarn, acl.Severity)
	assert.Contains(t, acl.Summary, "may not run scripts")
}

// On a cluster every node is checked, masters and replicas, and the slot
// coverage is reported; an unreachable node is an error (exit 69).
func TestDoctorCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.ClusterWith(t, redistest.WithReplicas(1))
	code, rep := runDoctor(t, "--redis", "redis://"+cl.Addrs()[0])
	assert.Equal(t, exit.Hazard, code, "every master has an asynchronous replica")
	assert.Equal(t, "cluster", rep.Deployment)
	var addrs []string
	for _, n := range rep.Nodes {
		addrs = append(addrs, n.Addr)
		assert.True(t, n.Reachable, n.Addr)
	}
	assert.ElementsMatch(t, cl.Addrs(), addrs)
	for _, m := range cl.Masters() {
		f := rep.finding(t, "replication", m.Addr())
		assert.Equal(t, sevHazard, f.Severity)
		assert.Contains(t, f.Summary, "1 replica under asynchronous replication")
	}
	for _, r := range cl.Replicas() {
		i := slices.IndexFunc(rep.Nodes, func(n doctorNodeInfo) bool { return n.Addr == r.Addr() })
		require.GreaterOrEqual(t, i, 0)
		assert.Equal(t, "replica", rep.Nodes[i].Role)
		assert.Equal(t, cl.MasterOf(r).Addr(), rep.Nodes[i].Master)
		assert.Equal(t, rep.Nodes[i-1].Addr, rep.Nodes[i].Master, "each master is followed by its replica: %+v", rep.Nodes)
	}
	for _, a := range cl.Addrs() {
		for _, check := range []string{"maxmemory-policy", "persistence", "clock", "acl", "pubsub", "cluster"} {
			rep.finding(t, check, a)
		}
		if redistest.FeaturesAt(t, a).ShardedPubSub() {
			assert.Contains(t, rep.finding(t, "pubsub", a).Summary, "sharded pub/sub (SPUBLISH/SSUBSCRIBE) available")
		} else {
			assert.Contains(t, rep.finding(t, "pubsub", a).Summary, "no sharded pub/sub (needs Redis 7 or Valkey)")
		}
	}
	cf := rep.finding(t, "cluster", "")
	assert.Equal(t, sevOK, cf.Severity, cf.Summary+" "+cf.Meaning)
	assert.Equal(t, "cluster_state ok; 16384 of 16384 slots assigned, 16384 ok; 3 masters, 3 replicas", cf.Summary)
	assert.EqualValues(t, 16384, cf.Facts["slots_assigned"])

	res := clitest.Run(t, Command, "--redis", "redis://"+cl.Addrs()[1])
	assert.Equal(t, exit.Hazard, res.Code)
	assert.True(t, strings.HasPrefix(res.Stdout, "interlock doctor: cluster, redis "), res.Stdout)
	assert.Contains(t, res.Stdout, "\ncluster\n  ok ")
	for _, a := range cl.Addrs() {
		assert.Contains(t, res.Stdout, "\n"+a+" (")
	}
	assert.Equal(t, 1, strings.Count(res.Stdout, "What to do: Lock with interlock.WithReplicaAcks"), "each explanation once")
	assert.Contains(t, res.Stdout, "(Explained above, under 127.0.0.1:")

	down := cl.Replicas()[0]
	down.Stop()
	start := time.Now()
	code, rep = runDoctor(t, "--redis", "redis://"+cl.Addrs()[0])
	assert.Equal(t, exit.Unavailable, code)
	assert.Equal(t, sevError, rep.Worst)
	f := rep.finding(t, "connection", down.Addr())
	assert.Equal(t, sevError, f.Severity)
	assert.Less(t, time.Since(start), 5*time.Second, "a refused connection fails fast")
}

func TestDoctorUsage(t *testing.T) {
	t.Parallel()
	res := clitest.Run(t, Command, "--redis", "redis://127.0.0.1:1")
	assert.Equal(t, exit.Unavailable, res.Code)
	assert.Contains(t, res.Stderr, "interlock: cannot connect to Redis at 127.0.0.1:1")
	assert.Empty(t, res.Stdout)
	res = clitest.Run(t, Command, "--redis", clitest.RedisURL(), "extra")
	assert.Equal(t, exit.Usage, res.Code)
	assert.Contains(t, res.Stderr, "interlock: doctor: unexpected argument")
	res = clitest.Run(t, Command, "--redis", clitest.RedisURL(), "--name", "a{b")
	assert.Equal(t, exit.Usage, res.Code)
	res = clitest.Run(t, Command, "-h")
	assert.Equal(t, exit.OK, res.Code)
	assert.Equal(t, usage, res.Stdout)
}

func TestDoctorSeverityJSON(t *testing.T) {
	t.Parallel()
	for s := sevOK; s <= sevError; s++ {
		b, err := json.Marshal(s)
		require.NoError(t, err)
		var back severity
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, s, back)
	}
	assert.Equal(t, []int{0, 0, 1, 2, 69}, []int{doctorExitCode(sevOK), doctorExitCode(sevInfo),
		doctorExitCode(sevWarn), doctorExitCode(sevHazard), doctorExitCode(sevError)})
	var s severity
	assert.Error(t, json.Unmarshal([]byte(`"bad"`), &s))
}

func TestParseClusterNodes(t *testing.T) {
	t.Parallel()
	nodes := parseClusterNodes("txt:a1 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460 [5461->-b2]\n" +
		"b2 127.0.0.1:7001@17001,host.example master - 0 0 2 connected 5461-10922\n" +
		"c3 127.0.0.1:7002@17002 slave a1 0 0 1 connected\n" +
		"d4 :0@0 master,fail,noaddr - 0 0 3 disconnected 10923 10924-16383\n")
	require.Len(t, nodes, 4)
	assert.Equal(t, doctorClusterNode{id: "a1", addr: "127.0.0.1:7000", master: "-", flags: []string{"myself", "master"}, slots: 5461}, nodes[0])
	assert.Equal(t, "127.0.0.1:7001", nodes[1].addr)
	assert.Equal(t, "a1", nodes[2].master)
	assert.Equal(t, 5461, nodes[3].slots)
	assert.True(t, nodes[3].has("fail"))
	assert.False(t, usableAddr(nodes[3].addr))
}

// Valkey 8 and later report the mode as server_mode, Redis as redis_mode.
func TestNodeMode(t *testing.T) {
	t.Parallel()
	valkey := &doctorNode{info: map[string]string{"server_mode": "sentinel", "redis_version": "7.2.4"}}
	redis := &doctorNode{info: map[string]string{"redis_mode": "cluster"}}
	assert.Equal(t, "sentinel", valkey.mode())
	assert.Equal(t, "cluster", redis.mode())
}

// The checks on made-up nodes: what the servers in the tests above cannot
// easily show.
func TestDoctorChecks(t *testing.T) {
	t.Parallel()
	node := func(info map[string]string) *doctorNode {
		return &doctorNode{addr: "h:1", info: info, config: map[string]string{}}
	}
	n := node(map[string]string{"maxmemory_policy": "noeviction", "maxmemory": "1000", "used_memory": "950", "evicted_keys": "3", "errorstat_OOM": "count=7"})
	f := n.checkEviction()
	assert.Equal(t, sevWarn, f.Severity)
	assert.Contains(t, f.Meaning, "memory is 95% full")
	assert.Contains(t, f.Meaning, "7 commands for lack of memory")
	assert.Contains(t, f.Meaning, "3 keys were evicted")

	n = node(map[string]string{"errorstat_BUSY": "count=2"})
	n.config["busy-reply-threshold"] = "5000"
	f = n.checkBusy()
	assert.Equal(t, sevWarn, f.Severity)
	assert.Contains(t, f.Summary, "answered BUSY 2 times")
	n.config["busy-reply-threshold"] = "60000"
	delete(n.info, "errorstat_BUSY")
	assert.Equal(t, sevWarn, n.checkBusy().Severity)
	n.config["busy-reply-threshold"] = "5000"
	assert.Equal(t, sevOK, n.checkBusy().Severity)

	for _, tc := range []struct {
		skew, rtt time.Duration
		want      severity
	}{
		{10 * time.Millisecond, time.Millisecond, sevOK},
		{300 * time.Millisecond, time.Millisecond, sevInfo},
		{-2 * time.Second, time.Millisecond, sevWarn},
		{1100 * time.Millisecond, time.Second, sevInfo}, // within the round trip, it may be 600ms
	} {
		n := node(map[string]string{})
		n.skew, n.rtt = tc.skew, tc.rtt
		assert.Equal(t, tc.want, n.checkClock().Severity, "skew %v rtt %v", tc.skew, tc.rtt)
	}

	n = node(map[string]string{"role": "slave", "master_host": "m", "master_port": "2", "master_link_status": "down", "master_link_down_since_seconds": "9"})
	f = (&doctor{}).checkReplication(n)
	assert.Equal(t, sevWarn, f.Severity)
	assert.Equal(t, "replica of m:2, link down (down for 9s)", f.Summary)

	n = node(map[string]string{"role": "master", "master_replid2": "abc", "second_repl_offset": "42"})
	f, ok := n.checkFailover()
	require.True(t, ok)
	assert.Contains(t, f.Summary, "promoted from a replica at replication offset 42")
	n.info["master_replid2"] = strings.Repeat("0", 40)
	_, ok = n.checkFailover()
	assert.False(t, ok)

	seed := node(nil)
	seed.clusterInfo = map[string]string{"cluster_state": "fail", "cluster_slots_assigned": "10923", "cluster_slots_ok": "10923"}
	f = checkCluster(seed, []*doctorNode{seed})
	assert.Equal(t, sevError, f.Severity)
	assert.Contains(t, f.Meaning, "5461 slots have no master")
}

// A server that enforces slots behind one address (cluster_enabled:1,
// CLUSTER refused) is reported as such, explained, with classic pub/sub;
// its refused CLUSTER commands are no access finding.
func TestDoctorSlotted(t *testing.T) {
	t.Parallel()
	s := redistest.Slotted(t)
	code, rep := runDoctor(t, "--redis", "redis://"+s.Addr())
	assert.Equal(t, "slotted", rep.Deployment)
	f := rep.finding(t, "slots", "")
	assert.Equal(t, sevInfo, f.Severity)
	assert.Contains(t, f.Summary, "cluster_enabled:1")
	assert.Contains(t, f.Summary, "unknown command")
	assert.Contains(t, f.Meaning, "CROSSSLOT")
	assert.Contains(t, f.Meaning, "grouped by slot")
	p := rep.finding(t, "pubsub", s.Addr())
	assert.Contains(t, p.Summary, "classic pub/sub")
	for _, f := range rep.Findings {
		assert.NotEqual(t, "access", f.Check, "CLUSTER refused behind one address is no access problem: %+v", f)
		assert.NotEqual(t, "cluster", f.Check, "%+v", f)
	}
	assert.Less(t, code, exit.Hazard)

	res := clitest.Run(t, Command, "--redis", "redis://"+s.Addr())
	assert.True(t, strings.HasPrefix(res.Stdout, "interlock doctor: slotted, "), res.Stdout)
	assert.Contains(t, res.Stdout, "\nslotted\n  info    slots: hash slots enforced behind one address")
}
