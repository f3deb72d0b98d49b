package compat_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/runtime"
	"github.com/interlock-go/interlock/internal/script"
)

// Golden tests for the fair lock: the §15.2 and §15.3 vectors of
// reference/redisson-protocol.md, step by step, with the exact Redis state,
// the commands each script ran (MONITOR), the replies, and the messages on
// every waiter's own channel. Waiters that interlock runs are real
// goroutines blocked in Lock; waiters that must not act on their own (a
// Java waiter that has not retried yet, a dead one) are simulated by
// running the acquire script with the arguments Redisson would send.
//
// Where interlock deliberately differs from Redisson (documented in
// docs/protocol.md, "Fair lock"), the expectations say so:
//   - unlocking a lock that does not exist answers 2 and writes latch "2"
//     (Redisson: 1 and "1"); the client reports ErrNotHeld;
//   - a waiter that gives up while it is the head reads the new head
//     (LINDEX) and, if the lock is free, wakes it.

// Placeholders in expected script runs: a value bound, on first sight, to
// what MONITOR shows, and then required to be the same wherever it
// appears again in the step. Their names choose the shape they must have.
const (
	vLatch = "\x00latch" // the step's unlock latch key
	vNow   = "\x00now"   // a client clock reading, epoch ms
	vDL    = "\x00dl"    // a deadline the script computed, epoch ms
)

var (
	epochMillisRE = regexp.MustCompile(`^1[0-9]{12}$`)
	fairWait      = strconv.FormatInt(fairlock.DefaultWaitTimeout.Milliseconds(), 10) // "300000"
)

// reply is one recorded script reply: nil, an integer, or an error.
type reply struct {
	isNil bool
	n     int64
	err   error
}

// replyLog wraps the rueidis client interlock runs on and records the
// replies of the fair-lock scripts, by script and owner.
type replyLog struct {
	rueidis.Client
	mu      sync.Mutex
	replies map[string][]reply // script name + " " + owner
	changed chan struct{}
}

func newReplyLog(rc rueidis.Client) *replyLog {
	return &replyLog{Client: rc, replies: map[string][]reply{}, changed: make(chan struct{}, 1)}
}

func (l *replyLog) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	args := cmd.Commands()
	var key string
	if len(args) > 3 && (args[0] == "EVALSHA" || args[0] == "EVAL") {
		sha := args[1]
		if args[0] == "EVAL" {
			sum := sha1.Sum([]byte(sha))
			sha = hex.EncodeToString(sum[:])
		}
		if name, ok := scriptsBySHA[sha]; ok {
			if nk, err := strconv.Atoi(args[2]); err == nil && len(args) > 3+nk {
				for _, a := range args[3+nk:] {
					if ownerRE.MatchString(a) {
						key = name + " " + a
						break
					}
				}
			}
		}
	}
	res := l.Client.Do(ctx, cmd)
	if key == "" || script.IsNoScript(res.Error()) {
		return res
	}
	var r reply
	r.n, r.err = res.AsInt64()
	if rueidis.IsRedisNil(r.err) {
		r = reply{isNil: true}
	}
	l.mu.Lock()
	l.replies[key] = append(l.replies[key], r)
	l.mu.Unlock()
	select {
	case l.changed <- struct{}{}:
	default:
	}
	return res
}

// await waits until script has answered owner n times, and returns the
// replies.
func (l *replyLog) await(t *testing.T, script *script.Script, owner string, n int) []reply {
	t.Helper()
	deadline := time.After(markerTimeout)
	for {
		l.mu.Lock()
		got := slices.Clone(l.replies[script.Name()+" "+owner])
		l.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-l.changed:
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			t.Fatalf("%s answered %s %d times, want %d", script.Name(), owner, len(got), n)
		}
	}
}

// fairRecorder checks one step at a time, like recorder, with placeholders
// and with messages expected on per-waiter channels.
type fairRecorder struct {
	t       *testing.T
	ctl     *conn
	mon     *monitor
	taps    []*pubTap
	n       int
	latchRE *regexp.Regexp
	// retrying are waiters that may try again, and be refused, at any
	// step: a busy fair_acquire of theirs that a step does not expect is
	// left out of the comparison.
	retrying []string
}

// dropRetries removes from got the refused fair_acquire runs of the
// waiters in r.retrying that only read (refusedRead), beyond as many runs
// of theirs as want expects, the latest first: a waiter woken early may
// try again, and be refused, at any step. Runs that write are always
// compared.
func (r *fairRecorder) dropRetries(got, want []scriptRun) []scriptRun {
	owner := func(run scriptRun) string {
		if run.Script != script.FairAcquire().Name() || len(run.Argv) < 2 {
			return ""
		}
		return run.Argv[1]
	}
	count := func(runs []scriptRun, o string) int {
		n := 0
		for _, run := range runs {
			if owner(run) == o {
				n++
			}
		}
		return n
	}
	for _, o := range r.retrying {
		for surplus := count(got, o) - count(want, o); surplus > 0; surplus-- {
			for j := len(got) - 1; j >= 0; j-- {
				if run := got[j]; owner(run) == o && refusedRead(run) {
					got = slices.Delete(got, j, j+1)
					break
				}
			}
		}
	}
	return got
}

// refusedRead reports whether run is a fair_acquire refused without a
// write: reads only, ending with the holder's PTTL.
func refusedRead(run scriptRun) bool {
	if len(run.Cmds) == 0 || run.Cmds[len(run.Cmds)-1][0] != "pttl" {
		return false
	}
	for _, c := range run.Cmds {
		switch c[0] {
		case "lindex", "zscore", "exists", "hexists", "pttl":
		default:
			return false
		}
	}
	return true
}

// step checks the step just done: the messages each tap saw (a "0" on each
// of pubs, for taps that receive the lock's messages) and the scripts
// MONITOR saw. It returns the values the placeholders were bound to, by
// name with a suffix per occurrence order: "now", "now2", ...; a
// placeholder written with a digit suffix ("\x00now2") is a distinct one.
func (r *fairRecorder) step(label string, pubs []string, want ...scriptRun) map[string]string {
	t := r.t
	t.Helper()
	r.n++
	for _, p := range r.taps {
		got := p.step(t, r.ctl, r.n, len(pubs) > 0)
		var expect []pubMsg
		if p.receives {
			for _, ch := range pubs {
				expect = append(expect, pubMsg{Kind: p.kind, Channel: ch, Payload: "0"})
			}
		}
		if len(expect) == 0 && len(got) == 0 {
			continue
		}
		assert.Equal(t, expect, got, "step %d (%s): messages seen by the %s tap", r.n, label, p.label)
	}

	mark := "compat-fair-step-" + strconv.Itoa(r.n)
	r.ctl.do("ECHO", mark)
	lines := r.mon.untilEcho(t, mark, want...)
	got := r.dropRetries(scriptRuns(lines), want)

	vars := map[string]string{}
	shape := func(name string) *regexp.Regexp {
		switch {
		case strings.HasPrefix(name, "latch"):
			return r.latchRE
		case strings.HasPrefix(name, "now"):
			return epochMillisRE
		}
		return epochMillisRE // deadlines
	}
	for i := range want {
		if i >= len(got) {
			break
		}
		gl := got[i].lists()
		for j, c := range want[i].lists() {
			for k, a := range c {
				if !strings.HasPrefix(a, "\x00") || j >= len(gl) || k >= len(gl[j]) {
					continue
				}
				name := a[1:]
				if _, bound := vars[name]; !bound && shape(name).MatchString(gl[j][k]) {
					vars[name] = gl[j][k]
				}
			}
		}
	}
	resolve := func(c []string) []string {
		out := make([]string, len(c))
		for k, a := range c {
			if strings.HasPrefix(a, "\x00") {
				v, ok := vars[a[1:]]
				if !ok {
					v = "<" + a[1:] + " matching " + shape(a[1:]).String() + ">"
				}
				a = v
			}
			out[k] = a
		}
		return out
	}
	resolved := make([]scriptRun, len(want))
	for i, w := range want {
		resolved[i] = scriptRun{Script: w.Script, Keys: resolve(w.Keys), Argv: resolve(w.Argv)}
		for _, c := range w.Cmds {
			resolved[i].Cmds = append(resolved[i].Cmds, resolve(c))
		}
	}
	if len(resolved) == 0 && len(got) == 0 {
		return vars
	}
	if !assert.Equal(t, resolved, got, "step %d (%s): commands run by scripts", r.n, label) {
		for _, l := range lines {
			t.Logf("  MONITOR %s", l)
		}
	}
	return vars
}

// num parses a bound placeholder value.
func num(t *testing.T, vars map[string]string, name string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(vars[name], 10, 64)
	require.NoError(t, err, "placeholder %s = %q", name, vars[name])
	return n
}

// fairEnv is where a fair golden run happens.
type fairEnv struct {
	rc      rueidis.Client
	node    string   // the node that owns the lock's slot
	nodes   []string // every node, for the final scan
	sharded bool
}

// fairNames returns a plain name and one with its own hash tag, with the
// derived names §1.4 gives them, spelled out by hand.
func fairNames() []struct{ label, name, queue, timeouts, channel, latchPrefix, unique string } {
	plain := unique("myFair")
	tag := unique("fairtag")
	braced := "{" + tag + "}:jobs"
	return []struct{ label, name, queue, timeouts, channel, latchPrefix, unique string }{{
		label: "plain", name: plain,
		queue:       "redisson_lock_queue:{" + plain + "}",
		timeouts:    "redisson_lock_timeout:{" + plain + "}",
		channel:     "redisson_lock__channel:{" + plain + "}",
		latchPrefix: "redisson_unlock_latch:{" + plain + "}:",
		unique:      plain,
	}, {
		label: "braced", name: braced,
		queue:       "redisson_lock_queue:{" + tag + "}:jobs",
		timeouts:    "redisson_lock_timeout:{" + tag + "}:jobs",
		channel:     "redisson_lock__channel:{" + tag + "}:jobs",
		latchPrefix: "redisson_unlock_latch:{" + tag + "}:jobs:",
		unique:      tag,
	}}
}

// runFairGolden drives §15.2 and §15.3 through fairlock, with A = client
// a and B = client b, owners written A1, A2, B5, B6 as in the vectors.
func runFairGolden(t *testing.T, env fairEnv, N, Q, Z, ch, latchPrefix, uniq string) {
	ctx := testCtx(t, 2*time.Minute)
	slot := keys.Slot(N)
	for _, k := range []string{Q, Z, ch + ":x", latchPrefix + "0f6b3c1e9a2d4b7c8e1f2a3b4c5d6e7f"} {
		require.Equal(t, slot, keys.Slot(k), "slot of %s", k)
	}
	latchRE := regexp.MustCompile("^" + regexp.QuoteMeta(latchPrefix) + "[0-9a-f]{32}$")

	gate := newGatedDeletes(t, env.rc)
	log := newReplyLog(gate)
	a := newLockClient(t, log)
	b := newLockClient(t, log)
	t.Cleanup(gate.release)
	pub, err := runtime.Of(a).PublishCommand(ctx)
	require.NoError(t, err)
	require.Equal(t, map[bool]string{false: "PUBLISH", true: "SPUBLISH"}[env.sharded], pub)

	owner := func(c *interlock.Client, id int64) (context.Context, string) {
		octx := interlock.WithOwner(ctx, id)
		o, err := c.Owner(octx)
		require.NoError(t, err)
		require.Regexp(t, ownerRE, o)
		return octx, o
	}
	ctxA1, A1 := owner(a, 1)
	ctxA2, A2 := owner(a, 2)
	ctxB5, B5 := owner(b, 5)
	ctxB6, B6 := owner(b, 6)
	_, X1 := owner(a, 31)
	_, X2 := owner(a, 32)
	ctxX3, X3 := owner(a, 33)
	mA, mB := fairlock.New(a, N), fairlock.New(b, N)

	ctl := dial(t, env.node)
	if len(env.nodes) > 1 {
		for _, k := range []string{N, Q, Z, ch + ":" + B5} {
			assert.Equal(t, int64(slot), ctl.int("CLUSTER", "KEYSLOT", k), "CLUSTER KEYSLOT %s", k)
		}
	}

	// Taps on every waiter channel of the run: one of the kind the lock
	// publishes with, which must see each message, and one of the other
	// kind, which must see none (none on a server without sharded pub/sub).
	var waiterChans []string
	for _, o := range []string{A1, A2, B5, B6, X1, X2, X3} {
		waiterChans = append(waiterChans, ch+":"+o)
	}
	markS := keys.Suffix(N, "compat-mark")
	markC := "compat-mark:" + N
	var taps []*pubTap
	if shardedPubSub(t, env.node) {
		taps = append(taps, &pubTap{
			label: "SSUBSCRIBE", kind: "smessage", receives: env.sharded, markCmd: "SPUBLISH", markChan: markS,
			s: openStream(t, env.node, len(waiterChans)+1, append([]string{"SSUBSCRIBE", markS}, waiterChans...)...),
		})
	}
	var cTap *pubTap
	if env.sharded {
		cTap = &pubTap{
			label: "SUBSCRIBE", kind: "message", receives: false, markCmd: "PUBLISH", markChan: markC, settle: classicSettle,
			s: openStream(t, env.node, len(waiterChans)+1, append([]string{"SUBSCRIBE", markC}, waiterChans...)...),
		}
	} else {
		cTap = &pubTap{
			label: "PSUBSCRIBE", kind: "pmessage", receives: true, markCmd: "PUBLISH", markChan: markC,
			s: openStream(t, env.node, 1, "PSUBSCRIBE", "*"+uniq+"*"),
		}
		// The tap that must see nothing pauses before a publishing step
		// (see golden_pubsub_test.go); without one, the PSUBSCRIBE tap does.
		settled := cTap
		if len(taps) > 0 {
			settled = taps[0]
		}
		settled.settle = classicSettle
	}
	// Every waiter may be woken early and try again, refused, at any step.
	r := &fairRecorder{t: t, ctl: ctl, taps: append(taps, cTap), latchRE: latchRE,
		retrying: []string{A1, A2, B5, B6, X1, X2, X3}}
	base := &recorder{t: t, ctl: ctl} // for its latch and TTL checks
	r.mon = openMonitor(t, env.node)
	require.Empty(t, ctl.hash(N))

	state := func() (map[string]string, []string, map[string]int64) {
		t.Helper()
		zs := map[string]int64{}
		flat := ctl.strs("ZRANGE", Z, "0", "-1", "WITHSCORES")
		for i := 0; i+1 < len(flat); i += 2 {
			n, err := strconv.ParseInt(flat[i+1], 10, 64)
			require.NoError(t, err)
			zs[flat[i]] = n
		}
		return ctl.hash(N), ctl.strs("LRANGE", Q, "0", "-1"), zs
	}
	purgeNone := func(head string) [][]string { // the purge loop finding a live head
		if head == "" {
			return [][]string{cmd("lindex", Q, "0")}
		}
		return [][]string{cmd("lindex", Q, "0"), cmd("zscore", Z, head)}
	}
	with := func(pre [][]string, rest ...[]string) [][]string { return append(slices.Clone(pre), rest...) }
	acquire := func(lease, o, wait string, cmds ...[]string) scriptRun {
		return run(script.FairAcquire(), ks(N, Q, Z), argv(lease, o, wait, vNow), cmds...)
	}
	const ms30s = "30000"

	// ---- §15.2 ----

	// 1. A1 lock(): free, nobody queued.
	require.NoError(t, mA.Lock(ctxA1))
	v := r.step("15.2/1 lock", nil, acquire(ms30s, A1, fairWait, with(purgeNone(""),
		cmd("exists", N), cmd("exists", Q), cmd("lpop", Q), cmd("zrem", Z, A1), cmd("zrange", Z, "0", "-1"),
		cmd("hset", N, A1, "1"), cmd("pexpire", N, ms30s))...))
	assert.InDelta(t, time.Now().UnixMilli(), num(t, v, "now"), 5000, "now is the client's epoch-ms clock")
	nowA1 := num(t, v, "now")
	h, q, z := state()
	assert.Equal(t, map[string]string{A1: "1"}, h)
	assert.Empty(t, q)
	assert.Empty(t, z)
	assert.Equal(t, []reply{{isNil: true}}, log.await(t, script.FairAcquire(), A1, 1))

	// 2. B5 lock(): queued behind the holder. Its first attempt is told
	// the holder's PTTL and queues it with deadline PTTL + wait + now; its
	// second (after subscribing to its own channel) is told the PTTL.
	b5 := make(chan error, 1)
	go func() { b5 <- mB.Lock(ctxB5) }()
	got := log.await(t, script.FairAcquire(), B5, 2)
	v = r.step("15.2/2 B5 queues", nil,
		acquire(ms30s, B5, fairWait, with(purgeNone(""),
			cmd("exists", N), cmd("hexists", N, B5), cmd("zscore", Z, B5), cmd("lindex", Q, "-1"),
			cmd("pttl", N), cmd("zadd", Z, vDL, B5), cmd("rpush", Q, B5))...),
		run(script.FairAcquire(), ks(N, Q, Z), argv(ms30s, B5, fairWait, "\x00now2"), with(purgeNone(B5),
			cmd("exists", N), cmd("hexists", N, B5), cmd("zscore", Z, B5), cmd("pttl", N))...))
	ttlB5 := got[0].n
	assert.True(t, ttlB5 > 30000-ttlSlack.Milliseconds() && ttlB5 <= 30000, "B5 told %d, want the holder's PTTL", ttlB5)
	assert.True(t, got[1].n > 0 && got[1].n <= ttlB5, "B5's retry told %d, want max(0, PTTL)", got[1].n)
	dlB5 := num(t, v, "dl")
	assert.Equal(t, ttlB5+fairlock.DefaultWaitTimeout.Milliseconds()+num(t, v, "now"), dlB5, "deadline = ttl + wait + now")
	// Each script reads the clock a request's latency before the server
	// runs it and takes the PTTL, so the two agree on A1's lease end within
	// a difference of two latencies: a second on a loaded machine
	// (latency; the exact rule is the line above).
	assert.InDelta(t, nowA1+30000+300000, dlB5, 1000, "B5's deadline is the end of A1's lease plus the wait")
	_, q, z = state()
	assert.Equal(t, []string{B5}, q)
	assert.Equal(t, map[string]int64{B5: dlB5}, z)

	// 3. A2 lock(): queued behind B5, told score(B5) - now; its deadline is
	// score(B5) + wait.
	a2ctx, cancelA2 := context.WithCancel(ctxA2)
	defer cancelA2()
	a2 := make(chan error, 1)
	go func() { a2 <- mA.Lock(a2ctx) }()
	got = log.await(t, script.FairAcquire(), A2, 2)
	v = r.step("15.2/3 A2 queues", nil,
		acquire(ms30s, A2, fairWait, with(purgeNone(B5),
			cmd("exists", N), cmd("hexists", N, A2), cmd("zscore", Z, A2), cmd("lindex", Q, "-1"),
			cmd("zscore", Z, B5), cmd("zadd", Z, vDL, A2), cmd("rpush", Q, A2))...),
		run(script.FairAcquire(), ks(N, Q, Z), argv(ms30s, A2, fairWait, "\x00now2"), with(purgeNone(B5),
			cmd("exists", N), cmd("hexists", N, A2), cmd("zscore", Z, A2), cmd("pttl", N))...))
	assert.Equal(t, dlB5-num(t, v, "now"), got[0].n, "A2 told score(B5) - now")
	assert.Equal(t, dlB5+fairlock.DefaultWaitTimeout.Milliseconds(), num(t, v, "dl"), "deadline = score(B5) + wait")
	assert.True(t, got[1].n > 0 && got[1].n <= 30000, "A2's retry told %d, want max(0, PTTL)", got[1].n)
	_, q, z = state()
	assert.Equal(t, []string{B5, A2}, q)
	assert.Equal(t, map[string]int64{B5: dlB5, A2: dlB5 + 300000}, z)

	// 5. B6 tryLock() with no wait: refused, not queued.
	ok, err := mB.TryLock(ctxB6, 0, 0)
	require.NoError(t, err)
	assert.False(t, ok)
	r.step("15.2/5 B6 single attempt", nil,
		run(script.FairTryAcquire(), ks(N, Q, Z), argv(ms30s, B6, vNow, fairWait), with(purgeNone(B5),
			cmd("exists", N), cmd("hexists", N, B6))...))
	assert.Equal(t, []reply{{n: 1}}, log.await(t, script.FairTryAcquire(), B6, 1))
	_, q, _ = state()
	assert.Equal(t, []string{B5, A2}, q)

	// 6 + 8. A1 unlock: released, "0" on B5's channel only; B5, woken,
	// takes the lock, leaves the queue, and A2's deadline moves back by
	// the wait. (A2 sleeps on its PTTL timer: only the head is woken.)
	// A2 waits on A1's Client, so the unlock offers it the lock
	// (fair_transfer), which goes to the queue's head, B5, instead: the
	// effects of fair_unlock. A2 stands ready once its goroutine has read
	// its first try's answer, which a loaded machine may delay past A2's
	// second try reaching the server.
	require.Eventually(t, func() bool { return runtime.Of(a).Transfers.Offers() == 1 }, 10*time.Second, time.Millisecond, "A2 never stood ready")
	gate.hold()
	require.NoError(t, mA.Unlock(ctxA1))
	require.NoError(t, <-b5)
	v = r.step("15.2/6+8 unlock, head acquires", []string{ch + ":" + B5},
		run(script.FairTransfer(), ks(N, Q, Z, ch, vLatch), argv("0", ms30s, A1, vNow, pub, latchMillis, A2, ms30s, fairWait), with(
			[][]string{cmd("get", vLatch)}, with(purgeNone(B5),
				cmd("exists", N), cmd("hexists", N, A1), cmd("hincrby", N, A1, "-1"), cmd("del", N),
				cmd("lindex", Q, "0"), cmd("set", vLatch, "1", "px", latchMillis), cmd(pub, ch+":"+B5, "0"))...)...),
		run(script.FairAcquire(), ks(N, Q, Z), argv(ms30s, B5, fairWait, "\x00now2"), with(purgeNone(B5),
			cmd("exists", N), cmd("exists", Q), cmd("lindex", Q, "0"), cmd("lpop", Q), cmd("zrem", Z, B5),
			cmd("zrange", Z, "0", "-1"), cmd("zincrby", Z, "-"+fairWait, A2), cmd("hset", N, B5, "1"), cmd("pexpire", N, ms30s))...))
	assert.Equal(t, "1", ctl.str("GET", v["latch"]))
	base.latchDeleted(gate, v["latch"])
	h, q, z = state()
	assert.Equal(t, map[string]string{B5: "1"}, h)
	assert.Equal(t, []string{A2}, q)
	assert.Equal(t, map[string]int64{A2: dlB5}, z, "A2's deadline moved back by the wait")
	guardB5 := mB.Guard(ctxB5)
	require.NoError(t, guardB5.Err())

	// 9. A2 gives up (its context ends): it leaves the queue; as it was
	// the head, the new head is read (there is none). Q and Z vanish.
	cancelA2()
	assert.ErrorIs(t, <-a2, context.Canceled)
	// Lock returns with its context; the giving up is sent in the
	// background, and may need a second round trip (NOSCRIPT, then EVAL).
	redistest.Eventually(t, 10*time.Second, func() bool { return ctl.int("EXISTS", Q) == 0 }, "A2 left the queue")
	r.step("15.2/9 A2 gives up", nil,
		run(script.FairAcquireFailed(), ks(Q, Z, N, ch), argv(A2, fairWait, "0", pub),
			cmd("lrange", Q, "0", "-1"), cmd("zrem", Z, A2), cmd("lrem", Q, "0", A2), cmd("lindex", Q, "0")))
	assert.Zero(t, ctl.int("EXISTS", Q))
	assert.Zero(t, ctl.int("EXISTS", Z))

	// 10. forceUnlock: no waiter, no message. (By B, whose Client then
	// ends B5's hold at once; a force unlock by another Client is noticed
	// by the holder's at its next renewal.)
	forced, err := mB.ForceUnlock(ctxB6)
	require.NoError(t, err)
	assert.True(t, forced)
	r.step("15.2/10 force unlock", nil,
		run(script.FairForceUnlock(), ks(N, Q, Z, ch), argv("0", vNow, pub),
			cmd("lindex", Q, "0"), cmd("del", N), cmd("lindex", Q, "0")))
	assert.Zero(t, ctl.int("EXISTS", N))
	select {
	case <-guardB5.Done():
		assert.ErrorIs(t, context.Cause(guardB5), interlock.ErrLockLost)
	case <-time.After(guardEnds):
		t.Error("B5's guard survived a force unlock by its own Client")
	}
	forced, err = mA.ForceUnlock(ctxA1)
	require.NoError(t, err)
	assert.False(t, forced)
	r.step("15.2/10b force unlock, free", nil,
		run(script.FairForceUnlock(), ks(N, Q, Z, ch), argv("0", vNow, pub), cmd("lindex", Q, "0"), cmd("del", N)))

	// ---- §15.3 a: a stale waiter is purged ----

	// A1 takes the lock with a 1s lease; B5, simulated, queues with a 200ms
	// wait (Redisson's tryLock(200ms)) and then stops acting, as a dead
	// process would.
	require.NoError(t, mA.LockLease(ctxA1, time.Second))
	now := time.Now().UnixMilli()
	told, err := script.FairAcquire().Exec(ctx, env.rc, ks(N, Q, Z), argv("1000", B5, "200", strconv.FormatInt(now, 10))).AsInt64()
	require.NoError(t, err)
	assert.True(t, told > 0 && told <= 1000, "B5 told %d, want the holder's PTTL", told)
	r.step("15.3a/1 lease 1s, B5 queues with wait 200ms", nil,
		acquire("1000", A1, fairWait, with(purgeNone(""),
			cmd("exists", N), cmd("exists", Q), cmd("lpop", Q), cmd("zrem", Z, A1), cmd("zrange", Z, "0", "-1"),
			cmd("hset", N, A1, "1"), cmd("pexpire", N, "1000"))...),
		run(script.FairAcquire(), ks(N, Q, Z), argv("1000", B5, "200", strconv.FormatInt(now, 10)), with(purgeNone(""),
			cmd("exists", N), cmd("hexists", N, B5), cmd("zscore", Z, B5), cmd("lindex", Q, "-1"),
			cmd("pttl", N), cmd("zadd", Z, strconv.FormatInt(told+200+now, 10), B5), cmd("rpush", Q, B5))...))
	// After the lease and B5's deadline: B6 lock() drops B5 and acquires.
	time.Sleep(time.Until(time.UnixMilli(now + told + 200 + 100)))
	require.NoError(t, mB.Lock(ctxB6))
	r.step("15.3a/2 B6 purges the stale B5 and acquires", nil,
		acquire(ms30s, B6, fairWait, cmd("lindex", Q, "0"), cmd("zscore", Z, B5), cmd("zrem", Z, B5), cmd("lpop", Q),
			cmd("lindex", Q, "0"), cmd("exists", N), cmd("exists", Q), cmd("lpop", Q), cmd("zrem", Z, B6),
			cmd("zrange", Z, "0", "-1"), cmd("hset", N, B6, "1"), cmd("pexpire", N, ms30s)))
	h, q, z = state()
	assert.Equal(t, map[string]string{B6: "1"}, h)
	assert.Empty(t, q)
	assert.Empty(t, z)
	// A1, whose lease ran out, unlocks a lock B6 now holds: not held,
	// nothing changes, no latch, no message.
	require.ErrorIs(t, mA.Unlock(ctxA1), interlock.ErrNotHeld)
	r.step("15.3a/3 A1 unlocks B6's lock", nil,
		run(script.FairUnlock(), ks(N, Q, Z, ch, vLatch), argv("0", ms30s, A1, vNow, pub, latchMillis),
			cmd("get", vLatch), cmd("lindex", Q, "0"), cmd("exists", N), cmd("hexists", N, A1)))
	assert.Empty(t, ctl.scan(latchPrefix+"*"), "a not-owner unlock left a latch")
	gate.hold()
	require.NoError(t, mB.Unlock(ctxB6))
	v = r.step("15.3a/4 B6 unlocks, nobody queued", nil,
		run(script.FairUnlock(), ks(N, Q, Z, ch, vLatch), argv("0", ms30s, B6, vNow, pub, latchMillis),
			cmd("get", vLatch), cmd("lindex", Q, "0"), cmd("exists", N), cmd("hexists", N, B6),
			cmd("hincrby", N, B6, "-1"), cmd("del", N), cmd("set", vLatch, "1", "px", latchMillis), cmd("lindex", Q, "0")))
	base.latchDeleted(gate, v["latch"])

	// ---- §15.3 b: unlock of an expired lock ----

	// A1 takes the lock with a 900ms lease; B5 (simulated: a Java waiter
	// that has not retried yet) queues with the default wait, and A2
	// (simulated) behind it.
	require.NoError(t, mA.LockLease(ctxA1, 900*time.Millisecond))
	nowB := time.Now().UnixMilli()
	toldB5, err := script.FairAcquire().Exec(ctx, env.rc, ks(N, Q, Z), argv(ms30s, B5, fairWait, strconv.FormatInt(nowB, 10))).AsInt64()
	require.NoError(t, err)
	nowA := nowB + 1
	toldA2, err := script.FairAcquire().Exec(ctx, env.rc, ks(N, Q, Z), argv(ms30s, A2, fairWait, strconv.FormatInt(nowA, 10))).AsInt64()
	require.NoError(t, err)
	dlB5 = toldB5 + 300000 + nowB
	assert.Equal(t, dlB5-nowA, toldA2, "A2 told score(B5) - now")
	_, q, z = state()
	assert.Equal(t, []string{B5, A2}, q)
	assert.Equal(t, map[string]int64{B5: dlB5, A2: dlB5 + 300000}, z)
	r.step("15.3b/1 lease 900ms, B5 and A2 queue", nil,
		acquire("900", A1, fairWait, with(purgeNone(""),
			cmd("exists", N), cmd("exists", Q), cmd("lpop", Q), cmd("zrem", Z, A1), cmd("zrange", Z, "0", "-1"),
			cmd("hset", N, A1, "1"), cmd("pexpire", N, "900"))...),
		run(script.FairAcquire(), ks(N, Q, Z), argv(ms30s, B5, fairWait, strconv.FormatInt(nowB, 10)), with(purgeNone(""),
			cmd("exists", N), cmd("hexists", N, B5), cmd("zscore", Z, B5), cmd("lindex", Q, "-1"),
			cmd("pttl", N), cmd("zadd", Z, strconv.FormatInt(dlB5, 10), B5), cmd("rpush", Q, B5))...),
		run(script.FairAcquire(), ks(N, Q, Z), argv(ms30s, A2, fairWait, strconv.FormatInt(nowA, 10)), with(purgeNone(B5),
			cmd("exists", N), cmd("hexists", N, A2), cmd("zscore", Z, A2), cmd("lindex", Q, "-1"),
			cmd("zscore", Z, B5), cmd("zadd", Z, strconv.FormatInt(dlB5+300000, 10), A2), cmd("rpush", Q, A2))...))

	// The lease runs out (no message). A1 unlocks: the head, B5, is told;
	// interlock's script answers 2 and writes latch "2" (Redisson: 1 and
	// "1"), and Unlock reports ErrNotHeld.
	time.Sleep(1100 * time.Millisecond)
	require.Zero(t, ctl.int("EXISTS", N), "the 900ms lease should have run out")
	gate.hold()
	require.ErrorIs(t, mA.Unlock(ctxA1), interlock.ErrNotHeld)
	v = r.step("15.3b/2 unlock of the expired lock", []string{ch + ":" + B5},
		run(script.FairUnlock(), ks(N, Q, Z, ch, vLatch), argv("0", ms30s, A1, vNow, pub, latchMillis), with(
			[][]string{cmd("get", vLatch)}, with(purgeNone(B5),
				cmd("exists", N), cmd("lindex", Q, "0"), cmd(pub, ch+":"+B5, "0"),
				cmd("set", vLatch, "2", "px", latchMillis))...)...))
	assert.Equal(t, []reply{{n: 2}}, log.await(t, script.FairUnlock(), A1, 2)[1:], "the server's answer to the unlock (the first unlock of A1 offered the lock to A2: fair_transfer)")
	assert.Equal(t, "2", ctl.str("GET", v["latch"]))
	base.pttlWithin(v["latch"], 20*time.Second)
	// A replay of the same request finds the latch: 2 again.
	replay, err := script.FairUnlock().Exec(ctx, env.rc, ks(N, Q, Z, ch, v["latch"]),
		argv("0", ms30s, A1, strconv.FormatInt(time.Now().UnixMilli(), 10), pub, latchMillis)).AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(2), replay)
	r.step("15.3b/3 replay", nil, run(script.FairUnlock(), ks(N, Q, Z, ch, v["latch"]),
		argv("0", ms30s, A1, vNow, pub, latchMillis), cmd("get", v["latch"])))
	base.latchDeleted(gate, v["latch"])

	// §15.2/7: A2, queued but not the head, finds the lock free: told 0.
	nowC := time.Now().UnixMilli()
	zero, err := script.FairAcquire().Exec(ctx, env.rc, ks(N, Q, Z), argv(ms30s, A2, fairWait, strconv.FormatInt(nowC, 10))).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, zero)
	r.step("15.2/7 A2 retries while B5 is the head", nil,
		run(script.FairAcquire(), ks(N, Q, Z), argv(ms30s, A2, fairWait, strconv.FormatInt(nowC, 10)), with(purgeNone(B5),
			cmd("exists", N), cmd("exists", Q), cmd("lindex", Q, "0"), cmd("hexists", N, A2), cmd("zscore", Z, A2),
			cmd("pttl", N))...))

	// B5 gives up as the head of a free lock: A2, the new head, is woken
	// (interlock's addition; Redisson leaves A2 to its timer).
	_, err = script.FairAcquireFailed().Exec(ctx, env.rc, ks(Q, Z, N, ch), argv(B5, fairWait, "0", pub)).ToMessage()
	require.True(t, err == nil || rueidis.IsRedisNil(err), "acquire failed: %v", err)
	r.step("acquireFailed of the head of a free lock", []string{ch + ":" + A2},
		run(script.FairAcquireFailed(), ks(Q, Z, N, ch), argv(B5, fairWait, "0", pub),
			cmd("lrange", Q, "0", "-1"), cmd("zincrby", Z, "-"+fairWait, A2), cmd("zrem", Z, B5), cmd("lrem", Q, "0", B5),
			cmd("lindex", Q, "0"), cmd("exists", N), cmd(pub, ch+":"+A2, "0")))
	_, q, z = state()
	assert.Equal(t, []string{A2}, q)
	assert.Equal(t, map[string]int64{A2: dlB5}, z)
	_, err = script.FairAcquireFailed().Exec(ctx, env.rc, ks(Q, Z, N, ch), argv(A2, fairWait, "0", pub)).ToMessage()
	require.True(t, err == nil || rueidis.IsRedisNil(err), "acquire failed: %v", err)
	r.step("acquireFailed of the last waiter", nil,
		run(script.FairAcquireFailed(), ks(Q, Z, N, ch), argv(A2, fairWait, "0", pub),
			cmd("lrange", Q, "0", "-1"), cmd("zrem", Z, A2), cmd("lrem", Q, "0", A2), cmd("lindex", Q, "0")))

	// ---- acquireFailed arithmetic, wait 5000 (Redisson's drift tests) ----

	require.NoError(t, mA.LockLease(ctxA1, 30*time.Second))
	nowD := time.Now().UnixMilli()
	var toldX []int64
	for i, x := range []string{X1, X2, X3} {
		n, err := script.FairAcquire().Exec(ctx, env.rc, ks(N, Q, Z), argv(ms30s, x, "5000", strconv.FormatInt(nowD+int64(i), 10))).AsInt64()
		require.NoError(t, err)
		toldX = append(toldX, n)
	}
	d1 := toldX[0] + 5000 + nowD
	assert.Equal(t, d1-(nowD+1), toldX[1], "X2 told score(X1) - now")
	assert.Equal(t, d1+5000-(nowD+2), toldX[2], "X3 told score(X2) - now")
	_, q, z = state()
	assert.Equal(t, []string{X1, X2, X3}, q)
	assert.Equal(t, map[string]int64{X1: d1, X2: d1 + 5000, X3: d1 + 10000}, z)
	r.step("drift/1 three waiters with wait 5000", nil,
		acquire(ms30s, A1, fairWait, with(purgeNone(""),
			cmd("exists", N), cmd("exists", Q), cmd("lpop", Q), cmd("zrem", Z, A1), cmd("zrange", Z, "0", "-1"),
			cmd("hset", N, A1, "1"), cmd("pexpire", N, ms30s))...),
		run(script.FairAcquire(), ks(N, Q, Z), argv(ms30s, X1, "5000", strconv.FormatInt(nowD, 10)), with(purgeNone(""),
			cmd("exists", N), cmd("hexists", N, X1), cmd("zscore", Z, X1), cmd("lindex", Q, "-1"),
			cmd("pttl", N), cmd("zadd", Z, strconv.FormatInt(d1, 10), X1), cmd("rpush", Q, X1))...),
		run(script.FairAcquire(), ks(N, Q, Z), argv(ms30s, X2, "5000", strconv.FormatInt(nowD+1, 10)), with(purgeNone(X1),
			cmd("exists", N), cmd("hexists", N, X2), cmd("zscore", Z, X2), cmd("lindex", Q, "-1"),
			cmd("zscore", Z, X1), cmd("zadd", Z, strconv.FormatInt(d1+5000, 10), X2), cmd("rpush", Q, X2))...),
		run(script.FairAcquire(), ks(N, Q, Z), argv(ms30s, X3, "5000", strconv.FormatInt(nowD+2, 10)), with(purgeNone(X1),
			cmd("exists", N), cmd("hexists", N, X3), cmd("zscore", Z, X3), cmd("lindex", Q, "-1"),
			cmd("zscore", Z, X2), cmd("zadd", Z, strconv.FormatInt(d1+10000, 10), X3), cmd("rpush", Q, X3))...))

	// X2, in the middle, gives up: X3 moves up by 5000; no wake-up.
	_, err = script.FairAcquireFailed().Exec(ctx, env.rc, ks(Q, Z, N, ch), argv(X2, "5000", "0", pub)).ToMessage()
	require.True(t, err == nil || rueidis.IsRedisNil(err))
	r.step("drift/2 X2 gives up", nil,
		run(script.FairAcquireFailed(), ks(Q, Z, N, ch), argv(X2, "5000", "0", pub),
			cmd("lrange", Q, "0", "-1"), cmd("zincrby", Z, "-5000", X3), cmd("zrem", Z, X2), cmd("lrem", Q, "0", X2)))
	_, q, z = state()
	assert.Equal(t, []string{X1, X3}, q)
	assert.Equal(t, map[string]int64{X1: d1, X3: d1 + 5000}, z)

	// X1, the head, gives up while the lock is held: X3 moves up, and is
	// not woken (the lock is not free).
	_, err = script.FairAcquireFailed().Exec(ctx, env.rc, ks(Q, Z, N, ch), argv(X1, "5000", "0", pub)).ToMessage()
	require.True(t, err == nil || rueidis.IsRedisNil(err))
	r.step("drift/3 X1 gives up while the lock is held", nil,
		run(script.FairAcquireFailed(), ks(Q, Z, N, ch), argv(X1, "5000", "0", pub),
			cmd("lrange", Q, "0", "-1"), cmd("zincrby", Z, "-5000", X3), cmd("zrem", Z, X1), cmd("lrem", Q, "0", X1),
			cmd("lindex", Q, "0"), cmd("exists", N)))
	_, q, z = state()
	assert.Equal(t, []string{X3}, q)
	assert.Equal(t, map[string]int64{X3: d1}, z)

	// A1 unlocks: X3 is told. X3 (a real waiter now) acquires.
	gate.hold()
	require.NoError(t, mA.Unlock(ctxA1))
	v = r.step("drift/4 unlock wakes X3", []string{ch + ":" + X3},
		run(script.FairUnlock(), ks(N, Q, Z, ch, vLatch), argv("0", ms30s, A1, vNow, pub, latchMillis), with(
			[][]string{cmd("get", vLatch)}, with(purgeNone(X3),
				cmd("exists", N), cmd("hexists", N, A1), cmd("hincrby", N, A1, "-1"), cmd("del", N),
				cmd("set", vLatch, "1", "px", latchMillis), cmd("lindex", Q, "0"), cmd(pub, ch+":"+X3, "0"))...)...))
	base.latchDeleted(gate, v["latch"])
	require.NoError(t, mA.Lock(ctxX3))
	require.NoError(t, mA.Unlock(ctxX3))
	r.step("drift/5 X3 acquires and releases", nil,
		acquire(ms30s, X3, fairWait, with(purgeNone(X3),
			cmd("exists", N), cmd("exists", Q), cmd("lindex", Q, "0"), cmd("lpop", Q), cmd("zrem", Z, X3),
			cmd("zrange", Z, "0", "-1"), cmd("hset", N, X3, "1"), cmd("pexpire", N, ms30s))...),
		run(script.FairUnlock(), ks(N, Q, Z, ch, vLatch), argv("0", ms30s, X3, "\x00now2", pub, latchMillis),
			cmd("get", vLatch), cmd("lindex", Q, "0"), cmd("exists", N), cmd("hexists", N, X3),
			cmd("hincrby", N, X3, "-1"), cmd("del", N), cmd("set", vLatch, "1", "px", latchMillis), cmd("lindex", Q, "0")))

	// ---- the transfer to the queue's head, a waiter of the same Client ----

	// A1 holds; A2 (A1's Client) queues as the head and stands ready.
	require.NoError(t, mA.Lock(ctxA1))
	triedA2 := len(log.await(t, script.FairAcquire(), A2, 0))
	a2 = make(chan error, 1)
	go func() { a2 <- mA.Lock(ctxA2) }()
	log.await(t, script.FairAcquire(), A2, triedA2+2)
	require.Eventually(t, func() bool { return runtime.Of(a).Transfers.Offers() == 1 }, 10*time.Second, time.Millisecond, "A2 never stood ready")
	v = r.step("transfer/1 A1 holds, A2 queues", nil,
		acquire(ms30s, A1, fairWait, with(purgeNone(""),
			cmd("exists", N), cmd("exists", Q), cmd("lpop", Q), cmd("zrem", Z, A1), cmd("zrange", Z, "0", "-1"),
			cmd("hset", N, A1, "1"), cmd("pexpire", N, ms30s))...),
		run(script.FairAcquire(), ks(N, Q, Z), argv(ms30s, A2, fairWait, "\x00now2"), with(purgeNone(""),
			cmd("exists", N), cmd("hexists", N, A2), cmd("zscore", Z, A2), cmd("lindex", Q, "-1"),
			cmd("pttl", N), cmd("zadd", Z, vDL, A2), cmd("rpush", Q, A2))...),
		run(script.FairAcquire(), ks(N, Q, Z), argv(ms30s, A2, fairWait, "\x00now3"), with(purgeNone(A2),
			cmd("exists", N), cmd("hexists", N, A2), cmd("zscore", Z, A2), cmd("pttl", N))...))
	_, q, _ = state()
	assert.Equal(t, []string{A2}, q)

	// A1 unlocks: the lock goes to A2 in the same script, as the head's
	// acquire would give it (out of the queue, one hold, the lease); no
	// DEL, no message, latch "2:0".
	gate.hold()
	require.NoError(t, mA.Unlock(ctxA1))
	require.NoError(t, <-a2)
	v = r.step("transfer/2 A1's unlock passes the lock to A2", nil,
		run(script.FairTransfer(), ks(N, Q, Z, ch, vLatch), argv("0", ms30s, A1, vNow, pub, latchMillis, A2, ms30s, fairWait), with(
			[][]string{cmd("get", vLatch)}, with(purgeNone(A2),
				cmd("exists", N), cmd("hexists", N, A1), cmd("hincrby", N, A1, "-1"), cmd("del", N),
				cmd("lindex", Q, "0"), cmd("lpop", Q), cmd("zrem", Z, A2), cmd("zrange", Z, "0", "-1"),
				cmd("hset", N, A2, "1"), cmd("pexpire", N, ms30s), cmd("set", vLatch, "2:0", "px", latchMillis))...)...))
	h, q, z = state()
	assert.Equal(t, map[string]string{A2: "1"}, h)
	assert.Empty(t, q)
	assert.Empty(t, z)
	assert.Equal(t, "2:0", ctl.str("GET", v["latch"]))
	base.pttlWithin(N, 30*time.Second)
	replayT, err := script.FairTransfer().Exec(ctx, env.rc, ks(N, Q, Z, ch, v["latch"]),
		argv("0", ms30s, A1, strconv.FormatInt(time.Now().UnixMilli(), 10), pub, latchMillis, A2, ms30s, fairWait)).AsIntSlice()
	require.NoError(t, err)
	assert.Equal(t, []int64{2, 0}, replayT)
	r.step("transfer/3 replay", nil, run(script.FairTransfer(), ks(N, Q, Z, ch, v["latch"]),
		argv("0", ms30s, A1, vNow, pub, latchMillis, A2, ms30s, fairWait), cmd("get", v["latch"])))
	base.latchDeleted(gate, v["latch"])
	require.NoError(t, mA.Unlock(ctxA2))
	r.step("transfer/4 A2 unlocks, nobody queued", nil,
		run(script.FairUnlock(), ks(N, Q, Z, ch, vLatch), argv("0", ms30s, A2, vNow, pub, latchMillis),
			cmd("get", vLatch), cmd("lindex", Q, "0"), cmd("exists", N), cmd("hexists", N, A2),
			cmd("hincrby", N, A2, "-1"), cmd("del", N), cmd("set", vLatch, "1", "px", latchMillis), cmd("lindex", Q, "0")))

	// A name whose derived keys would leave its slot is refused before
	// anything is sent.
	bad := fairlock.New(a, "a{"+unique("b"))
	require.ErrorIs(t, bad.Lock(ctxA1), interlock.ErrInvalid)
	r.step("invalid name", nil)

	// Nothing at all is left of the lock.
	gate.release()
	for _, addr := range env.nodes {
		c := ctl
		if addr != env.node {
			c = dial(t, addr)
		}
		assert.True(t, waitFor(2*time.Second, func() bool { return len(c.scan("*"+uniq+"*")) == 0 }),
			"keys left on %s: %v", addr, c.scan("*"+uniq+"*"))
	}
}

// TestGoldenFairLockStandalone runs §15.2 and §15.3 on a standalone
// server, where the fair lock publishes with PUBLISH: a PSUBSCRIBE tap sees
// each waiter's message, an SSUBSCRIBE tap on the waiters' channels none.
func TestGoldenFairLockStandalone(t *testing.T) {
	addr := monitoredStandalone(t)
	rc := redistest.NewClient(t, addr)
	for _, n := range fairNames() {
		t.Run(n.label, func(t *testing.T) {
			runFairGolden(t, fairEnv{rc: rc, node: addr, nodes: []string{addr}},
				n.name, n.queue, n.timeouts, n.channel, n.latchPrefix, n.unique)
		})
	}
}

// TestGoldenFairLockCluster runs them on the three-master cluster, where
// the fair lock publishes with SPUBLISH on the waiter's channel, in the
// lock's slot: an SSUBSCRIBE tap on the node that owns it sees each
// message, a classic SUBSCRIBE tap on the same channels none. On Redis 6
// it publishes with PUBLISH, which a PSUBSCRIBE tap on the node sees.
func TestGoldenFairLockCluster(t *testing.T) {
	cl := monitoredCluster(t)
	rc := cl.Client(t)
	for _, n := range fairNames() {
		t.Run(n.label, func(t *testing.T) {
			node := cl.NodeForKey(n.name).Addr()
			runFairGolden(t, fairEnv{rc: rc, node: node, nodes: cl.Addrs(), sharded: shardedPubSub(t, node)},
				n.name, n.queue, n.timeouts, n.channel, n.latchPrefix, n.unique)
		})
	}
}
