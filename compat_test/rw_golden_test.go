package compat_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/runtime"
	"github.com/interlock-go/interlock/internal/script"
	"github.com/interlock-go/interlock/rwlock"
)

// Golden tests for the read/write lock: the §15.4 and §15.5 (4.7.0)
// vectors of reference/redisson-protocol.md, step by step, through the
// rwlock API, with the exact Redis state, the commands each script ran
// (MONITOR) and the messages it published ("0" for a read release, "1" for
// a write release, nothing for a downgrade).

// rwAnyMillis stands, in an expected command, for a TTL that a script
// computed (a PTTL plus or max something): any positive integer. The
// values found are returned by the step, in order.
const rwAnyMillis = "\x00ms"

var rwMillisRE = regexp.MustCompile(`^[1-9][0-9]*$`)

// rwNames are a read/write lock's name and derived names (§1.4, §1.5),
// spelled out by hand.
type rwNames struct {
	label       string
	name        string
	channel     string // redisson_rwlock:{N}
	prefix      string // {N}: the timeout keys' prefix
	latchPrefix string
	unique      string // a substring of every key and channel of the lock
}

func rwGoldenNames() []rwNames {
	plain := unique("myRW")
	tag := unique("rw")
	braced := "{" + tag + "}:9"
	return []rwNames{{
		label:       "plain",
		name:        plain,
		channel:     "redisson_rwlock:{" + plain + "}",
		prefix:      "{" + plain + "}",
		latchPrefix: "redisson_unlock_latch:{" + plain + "}:",
		unique:      plain,
	}, {
		label:       "braced",
		name:        braced,
		channel:     "redisson_rwlock:{" + tag + "}:9",
		prefix:      braced,
		latchPrefix: "redisson_unlock_latch:{" + tag + "}:9:",
		unique:      tag,
	}}
}

// timeouts is T(O) of §15.4: the prefix of O's read-hold timeout keys.
func (n rwNames) timeouts(owner string) string { return n.prefix + ":" + owner + ":rwlock_timeout" }

// rwEnv is where a golden run happens.
type rwEnv struct {
	rc      rueidis.Client
	node    string   // the node that owns the lock's slot
	nodes   []string // every node, for the final scan
	sharded bool
	taps    func(t *testing.T, n rwNames) []*pubTap
}

// rwRecorder checks one step at a time: the messages each tap received
// and the script runs MONITOR saw since the previous step.
type rwRecorder struct {
	t       *testing.T
	ctl     *conn
	mon     *monitor
	taps    []*pubTap
	n       int
	channel string
	latchRE *regexp.Regexp
	// skip lists the renewal scripts, which the Clients' own watchdog may
	// run in any step on a slow machine; they are ignored unless a step
	// expects them.
	skip map[string]bool
}

// step checks the step just done. payload is the message it must have
// published on the lock's channel ("" for none); want lists the script
// runs, with anyLatch for the step's latch key and rwAnyMillis for
// computed TTLs. It returns the latch key and the computed TTLs.
func (r *rwRecorder) step(label, payload string, want ...scriptRun) (latch string, ttls []int64) {
	t := r.t
	t.Helper()
	r.n++
	for _, p := range r.taps {
		got := p.step(t, r.ctl, r.n, payload != "")
		var expect []pubMsg
		if payload != "" && p.receives {
			expect = []pubMsg{{Kind: p.kind, Channel: r.channel, Payload: payload}}
		}
		if len(expect) == 0 && len(got) == 0 {
			continue
		}
		assert.Equal(t, expect, got, "step %d (%s): messages seen by the %s tap", r.n, label, p.label)
	}

	mark := "compat-rw-step-" + strconv.Itoa(r.n)
	r.ctl.do("ECHO", mark)
	lines := r.mon.untilEcho(t, mark, want...)
	expected := map[string]bool{}
	for _, w := range want {
		expected[w.Script] = true
	}
	var got []scriptRun
	for _, g := range scriptRuns(lines) {
		if r.skip[g.Script] && !expected[g.Script] {
			continue
		}
		got = append(got, g)
	}

	// Resolve the placeholders against what the step actually sent, where
	// it has the right shape.
	resolved := make([]scriptRun, len(want))
	for i, w := range want {
		var gl [][]string
		if i < len(got) {
			gl = got[i].lists()
		}
		wl := w.lists()
		out := make([][]string, len(wl))
		for j, c := range wl {
			out[j] = make([]string, len(c))
			for k, a := range c {
				var actual string
				if j < len(gl) && k < len(gl[j]) {
					actual = gl[j][k]
				}
				switch {
				case a == anyLatch && latch == "" && r.latchRE.MatchString(actual):
					latch = actual
					a = actual
				case a == anyLatch && latch != "":
					a = latch
				case a == anyLatch:
					a = "<a latch key matching " + r.latchRE.String() + ">"
				case a == rwAnyMillis && rwMillisRE.MatchString(actual):
					v, _ := strconv.ParseInt(actual, 10, 64)
					ttls = append(ttls, v)
					a = actual
				case a == rwAnyMillis:
					a = "<a positive number of ms>"
				}
				out[j][k] = a
			}
		}
		resolved[i] = scriptRun{Script: w.Script, Keys: out[0], Argv: out[1], Cmds: out[2:]}
		if len(resolved[i].Cmds) == 0 {
			resolved[i].Cmds = nil
		}
	}
	if len(resolved) == 0 && len(got) == 0 {
		return latch, ttls
	}
	if !assert.Equal(t, resolved, got, "step %d (%s): commands run by scripts", r.n, label) {
		for _, l := range lines {
			t.Logf("  MONITOR %s", l)
		}
	}
	return latch, ttls
}

// pttl asserts that key's PTTL is in (lo, hi] and returns it.
func (r *rwRecorder) pttl(key string, lo, hi time.Duration) time.Duration {
	r.t.Helper()
	got := time.Duration(r.ctl.int("PTTL", key)) * time.Millisecond
	assert.True(r.t, got <= hi && got > lo, "PTTL %s = %v, want within (%v, %v]", key, got, lo, hi)
	return got
}

// latch checks the latch an unlock step left (its value and TTL), then
// lets the Client's deleter go and checks that it removes the latch, and
// holds the deleter back again for the next step.
func (r *rwRecorder) latch(gate *gatedDeletes, latch, value string) {
	r.t.Helper()
	require.Regexp(r.t, r.latchRE, latch)
	require.Equal(r.t, keys.Slot(r.channel), keys.Slot(latch), "slot of %s", latch)
	assert.Equal(r.t, value, r.ctl.str("GET", latch), "latch %s", latch)
	// The step pinned the script's PX; this checks the key kept it,
	// with room for the seconds a loaded machine may put between the
	// unlock and this read (4 s seen with the matrix running).
	r.pttl(latch, 10*time.Second, 20*time.Second)
	start := time.Now()
	gate.release()
	for r.ctl.int("EXISTS", latch) == 1 {
		if time.Since(start) > latchGone {
			r.t.Fatalf("latch %s still present %v after the deleter was released", latch, latchGone)
		}
		time.Sleep(2 * time.Millisecond)
	}
	gate.hold()
}

// runRWGolden drives §15.4 and §15.5 through rwlock with A = client a,
// owner 1; B = client b, owner 7; the writer W = client b, owner 3.
func runRWGolden(t *testing.T, env rwEnv, n rwNames) {
	ctx := testCtx(t, 2*time.Minute)
	N, ch, P := n.name, n.channel, n.prefix

	// §1.4: every key and the channel of the lock in one slot.
	require.NoError(t, keys.Check(N))
	slot := keys.Slot(N)
	for _, k := range []string{ch, P + ":x", n.latchPrefix + "0f6b3c1e9a2d4b7c8e1f2a3b4c5d6e7f", n.timeouts("a:1") + ":1"} {
		require.Equal(t, slot, keys.Slot(k), "slot of %s", k)
	}

	gate := newGatedDeletes(t, env.rc)
	a := newLockClient(t, gate)
	b := newLockClient(t, gate)
	t.Cleanup(gate.release) // runs before the Clients close
	pub, err := runtime.Of(a).PublishCommand(ctx)
	require.NoError(t, err)
	require.Equal(t, map[bool]string{false: "PUBLISH", true: "SPUBLISH"}[env.sharded], pub)

	ctxA := interlock.WithOwner(ctx, 1)
	ctxB := interlock.WithOwner(ctx, 7)
	ctxW := interlock.WithOwner(ctx, 3)
	A, err := a.Owner(ctxA)
	require.NoError(t, err)
	B, err := b.Owner(ctxB)
	require.NoError(t, err)
	B3, err := b.Owner(ctxW)
	require.NoError(t, err)
	W := B3 + ":write"
	TA, TB, TW := n.timeouts(A), n.timeouts(B), n.timeouts(B3)
	rwA, rwB := rwlock.New(a, N), rwlock.New(b, N)

	ctl := dial(t, env.node)
	if len(env.nodes) > 1 {
		for _, k := range []string{N, ch, TA + ":1", n.latchPrefix + "0f6b3c1e9a2d4b7c8e1f2a3b4c5d6e7f"} {
			assert.Equal(t, int64(slot), ctl.int("CLUSTER", "KEYSLOT", k), "CLUSTER KEYSLOT %s", k)
		}
	}
	r := &rwRecorder{
		t: t, ctl: ctl, taps: env.taps(t, n), channel: ch,
		latchRE: regexp.MustCompile("^" + regexp.QuoteMeta(n.latchPrefix) + "[0-9a-f]{32}$"),
		skip:    map[string]bool{script.Renew().Name(): true, script.RWRenewRead().Name(): true},
	}
	r.mon = openMonitor(t, env.node)
	require.Empty(t, ctl.hash(N))
	gate.hold() // each latch stays until it was read

	is := func(v bool, err error) bool {
		t.Helper()
		require.NoError(t, err)
		return v
	}
	count := func(v int, err error) int {
		t.Helper()
		require.NoError(t, err)
		return v
	}
	readAcq := func(owner, lease string, cmds ...[]string) scriptRun {
		return run(script.RWReadAcquire(), ks(N, n.timeouts(owner)), argv(lease, owner, owner+":write"), cmds...)
	}
	readUnlock := func(owner string, cmds ...[]string) scriptRun {
		return run(script.RWReadUnlock(), ks(N, ch, n.timeouts(owner), P, anyLatch), argv("0", owner, pub, latchMillis), cmds...)
	}
	writeUnlock := func(cmds ...[]string) scriptRun {
		return run(script.RWWriteUnlock(), ks(N, ch, anyLatch), argv("1", watchdogMillis, W, pub, latchMillis), cmds...)
	}

	// 1. reader A:1 (watchdog).
	require.NoError(t, rwA.Read().Lock(ctxA))
	r.step("1 read A:1", "", readAcq(A, watchdogMillis,
		cmd("hget", N, "mode"), cmd("hset", N, "mode", "read"), cmd("hset", N, A, "1"),
		cmd("set", TA+":1", "1"), cmd("pexpire", TA+":1", watchdogMillis), cmd("pexpire", N, watchdogMillis)))
	assert.Equal(t, map[string]string{"mode": "read", A: "1"}, ctl.hash(N))
	r.pttl(TA+":1", 30*time.Second-ttlSlack, 30*time.Second)
	r.pttl(N, 30*time.Second-ttlSlack, 30*time.Second)
	assert.Equal(t, "1", ctl.str("GET", TA+":1"))

	// 2. reader B:7: the TTL is max(PTTL, lease).
	require.NoError(t, rwB.Read().Lock(ctxB))
	r.step("2 read B:7", "", readAcq(B, watchdogMillis,
		cmd("hget", N, "mode"), cmd("hincrby", N, B, "1"), cmd("set", TB+":1", "1"),
		cmd("pexpire", TB+":1", watchdogMillis), cmd("pttl", N), cmd("pexpire", N, watchdogMillis)))

	// 3. A:1 re-enters: a second timeout key.
	require.NoError(t, rwA.Read().Lock(ctxA))
	r.step("3 A:1 re-enters", "", readAcq(A, watchdogMillis,
		cmd("hget", N, "mode"), cmd("hincrby", N, A, "1"), cmd("set", TA+":2", "1"),
		cmd("pexpire", TA+":2", watchdogMillis), cmd("pttl", N), cmd("pexpire", N, watchdogMillis)))
	assert.Equal(t, map[string]string{"mode": "read", A: "2", B: "1"}, ctl.hash(N))
	for _, k := range []string{TA + ":1", TA + ":2", TB + ":1"} {
		assert.Equal(t, "1", ctl.str("GET", k))
		r.pttl(k, 30*time.Second-ttlSlack, 30*time.Second)
	}
	assert.Equal(t, 2, count(rwA.Read().HoldCount(ctxA)))
	assert.True(t, is(rwA.Read().IsLocked(ctxA)))
	assert.False(t, is(rwA.Write().IsLocked(ctxA)))
	r.step("3b queries", "",
		run(script.RWReadIsLocked(), ks(N), nil, cmd("hget", N, "mode")))

	// 4. writer B:3 tryLock: busy, answers the PTTL. A:1's write attempt
	// is an upgrade: refused before anything is sent.
	ok, err := rwB.Write().TryLock(ctxW, 0, 0)
	require.NoError(t, err)
	assert.False(t, ok)
	left, err := script.RWWriteAcquire().Exec(ctx, env.rc, []string{N}, []string{watchdogMillis, W}).AsInt64()
	require.NoError(t, err)
	assert.True(t, left > (30*time.Second-ttlSlack).Milliseconds() && left <= 30000, "busy write acquire returned %d", left)
	busy := run(script.RWWriteAcquire(), ks(N), argv(watchdogMillis, W), cmd("hget", N, "mode"), cmd("pttl", N))
	r.step("4 writer busy", "", busy, busy)
	_, err = rwA.Write().TryLock(ctxA, 0, 0)
	require.ErrorIs(t, err, rwlock.ErrUpgrade)
	r.step("4b upgrade refused", "")

	// 5. ReadLockTask (4.4+ layout) for client A: renews the hash and A's
	// timeout keys only.
	ctl.do("PEXPIRE", N, "5000")
	ctl.do("PEXPIRE", TA+":1", "5000")
	ctl.do("PEXPIRE", TB+":1", "5000")
	renewed, err := script.RWRenewRead().Exec(ctx, env.rc, []string{N, P}, []string{watchdogMillis, "1", A}).AsIntSlice()
	require.NoError(t, err)
	assert.Equal(t, []int64{1}, renewed)
	r.step("5 read renewal", "", run(script.RWRenewRead(), ks(N, P), argv(watchdogMillis, "1", A),
		cmd("hget", N, A), cmd("pexpire", TA+":2", watchdogMillis), cmd("pexpire", TA+":1", watchdogMillis),
		cmd("pexpire", N, watchdogMillis)))
	r.pttl(N, 30*time.Second-ttlSlack, 30*time.Second)
	r.pttl(TA+":1", 30*time.Second-ttlSlack, 30*time.Second)
	r.pttl(TB+":1", 0, 5*time.Second) // B's key is not ours: untouched
	// A batch of two locks, the second one not held by A: [1, 0].
	other := P + ":other"
	if strings.Contains(N, "{") {
		other = N + ":other"
	}
	renewed, err = script.RWRenewRead().Exec(ctx, env.rc, []string{N, P, other, other},
		[]string{watchdogMillis, "1", A, "2", A, B}).AsIntSlice()
	require.NoError(t, err)
	assert.Equal(t, []int64{1, 0}, renewed)
	r.step("5b read renewal, batch", "", run(script.RWRenewRead(), ks(N, P, other, other), argv(watchdogMillis, "1", A, "2", A, B),
		cmd("hget", N, A), cmd("pexpire", TA+":2", watchdogMillis), cmd("pexpire", TA+":1", watchdogMillis),
		cmd("pexpire", N, watchdogMillis), cmd("hget", other, A), cmd("hget", other, B)))
	assert.Zero(t, ctl.int("EXISTS", other))

	// 5c. A:1 extends its read holds (ours; watchdog holds: the watchdog
	// lease): its timeout keys and the hash, which keeps the longer TTL
	// while B:7 reads too.
	require.NoError(t, rwA.Read().Extend(ctxA, 10*time.Second))
	r.step("5c read extend", "", run(script.RWExtendRead(), ks(N, TA), argv(watchdogMillis, A),
		cmd("hget", N, A), cmd("pexpire", TA+":2", watchdogMillis), cmd("pexpire", TA+":1", watchdogMillis),
		cmd("hlen", N), cmd("pttl", N), cmd("pexpire", N, watchdogMillis)))
	r.pttl(TA+":2", 30*time.Second-ttlSlack, 30*time.Second)
	r.pttl(TB+":1", 0, 5*time.Second) // B's key is not ours: untouched

	// 6. A:1 unlock, one of two holds: the hash TTL becomes the longest
	// remaining timeout, latch 0.
	require.NoError(t, rwA.Read().Unlock(ctxA))
	latch, ttls := r.step("6 A:1 unlock", "", readUnlock(A,
		cmd("get", anyLatch), cmd("hget", N, "mode"), cmd("hexists", N, A), cmd("hincrby", N, A, "-1"),
		cmd("del", TA+":2"), cmd("hlen", N), cmd("hkeys", N), cmd("hget", N, "mode"),
		cmd("hget", N, A), cmd("pttl", TA+":1"), cmd("hget", N, B), cmd("pttl", TB+":1"),
		cmd("pexpire", N, rwAnyMillis), cmd("set", anyLatch, "0", "px", latchMillis)))
	r.latch(gate, latch, "0")
	assert.Equal(t, map[string]string{"mode": "read", A: "1", B: "1"}, ctl.hash(N))
	assert.Zero(t, ctl.int("EXISTS", TA+":2"))
	if assert.Len(t, ttls, 1) {
		assert.True(t, ttls[0] > (30*time.Second-ttlSlack).Milliseconds() && ttls[0] <= 30000, "PEXPIRE %d: A's remaining timeout", ttls[0])
	}

	// 7. A:1 unlock, its last hold: the hash now lives as long as B's
	// timeout (5s from step 5), the shorter one.
	require.NoError(t, rwA.Read().Unlock(ctxA))
	latch, ttls = r.step("7 A:1 unlock again", "", readUnlock(A,
		cmd("get", anyLatch), cmd("hget", N, "mode"), cmd("hexists", N, A), cmd("hincrby", N, A, "-1"),
		cmd("hdel", N, A), cmd("del", TA+":1"), cmd("hlen", N), cmd("hkeys", N), cmd("hget", N, "mode"),
		cmd("hget", N, B), cmd("pttl", TB+":1"),
		cmd("pexpire", N, rwAnyMillis), cmd("set", anyLatch, "0", "px", latchMillis)))
	r.latch(gate, latch, "0")
	if assert.Len(t, ttls, 1) {
		assert.LessOrEqual(t, ttls[0], int64(5000), "PEXPIRE: B's remaining timeout")
	}
	r.pttl(N, 0, 5*time.Second)
	assert.Equal(t, map[string]string{"mode": "read", B: "1"}, ctl.hash(N))
	assert.Equal(t, 0, count(rwA.Read().HoldCount(ctxA)))

	// 8. B:7 unlock, the last reader: DEL, "0", latch 1.
	require.NoError(t, rwB.Read().Unlock(ctxB))
	latch, _ = r.step("8 last reader", "0", readUnlock(B,
		cmd("get", anyLatch), cmd("hget", N, "mode"), cmd("hexists", N, B), cmd("hincrby", N, B, "-1"),
		cmd("hdel", N, B), cmd("del", TB+":1"), cmd("hlen", N), cmd("del", N), cmd(pub, ch, "0"),
		cmd("set", anyLatch, "1", "px", latchMillis)))
	r.latch(gate, latch, "1")
	assert.Zero(t, ctl.int("EXISTS", N))

	// 9. writer B:3 lock().
	require.NoError(t, rwB.Write().Lock(ctxW))
	r.step("9 write lock", "", run(script.RWWriteAcquire(), ks(N), argv(watchdogMillis, W),
		cmd("hget", N, "mode"), cmd("hset", N, "mode", "write"), cmd("hset", N, W, "1"), cmd("pexpire", N, watchdogMillis)))
	assert.Equal(t, map[string]string{"mode": "write", W: "1"}, ctl.hash(N))
	r.pttl(N, 30*time.Second-ttlSlack, 30*time.Second)
	assert.True(t, is(rwB.Write().IsHeld(ctxW)))
	assert.True(t, is(rwB.Write().IsLocked(ctxW)))
	assert.False(t, is(rwB.Read().IsLocked(ctxW)))
	r.step("9b queries", "",
		run(script.RWReadIsLocked(), ks(N), nil, cmd("hget", N, "mode"), cmd("hlen", N)))

	// 10. writer re-enters: the lease is added to the remaining TTL.
	require.NoError(t, rwB.Write().Lock(ctxW))
	_, ttls = r.step("10 write re-enter", "", run(script.RWWriteAcquire(), ks(N), argv(watchdogMillis, W),
		cmd("hget", N, "mode"), cmd("hexists", N, W), cmd("hincrby", N, W, "1"), cmd("pttl", N),
		cmd("pexpire", N, rwAnyMillis)))
	if assert.Len(t, ttls, 1) {
		assert.True(t, ttls[0] > (60*time.Second-ttlSlack).Milliseconds() && ttls[0] <= 60000, "PEXPIRE %d: remaining + 30000", ttls[0])
	}
	r.pttl(N, 60*time.Second-ttlSlack, 60*time.Second)

	// 11. reader A:1 while write-locked: busy.
	ok, err = rwA.Read().TryLock(ctxA, 0, 0)
	require.NoError(t, err)
	assert.False(t, ok)
	r.step("11 reader busy", "", readAcq(A, watchdogMillis,
		cmd("hget", N, "mode"), cmd("hexists", N, A+":write"), cmd("pttl", N)))

	// 12. the writer takes the read lock too.
	require.NoError(t, rwB.Read().Lock(ctxW))
	_, ttls = r.step("12 writer reads", "", readAcq(B3, watchdogMillis,
		cmd("hget", N, "mode"), cmd("hexists", N, W), cmd("hincrby", N, B3, "1"), cmd("set", TW+":1", "1"),
		cmd("pexpire", TW+":1", watchdogMillis), cmd("pttl", N), cmd("pexpire", N, rwAnyMillis)))
	assert.Equal(t, map[string]string{"mode": "write", W: "2", B3: "1"}, ctl.hash(N))
	if assert.Len(t, ttls, 1) {
		assert.Greater(t, ttls[0], int64(30000), "a read acquisition never shortens the TTL")
	}
	assert.True(t, is(rwB.Read().IsLocked(ctxW)), "the writer's read hold")
	r.step("12b queries", "",
		run(script.RWReadIsLocked(), ks(N), nil, cmd("hget", N, "mode"), cmd("hlen", N)))

	// 13. write unlock, one of two: PEXPIRE to the watchdog lease, latch 0.
	require.NoError(t, rwB.Write().Unlock(ctxW))
	latch, _ = r.step("13 write unlock", "", writeUnlock(
		cmd("get", anyLatch), cmd("hget", N, "mode"), cmd("hexists", N, W), cmd("hincrby", N, W, "-1"),
		cmd("pexpire", N, watchdogMillis), cmd("set", anyLatch, "0", "px", latchMillis)))
	r.latch(gate, latch, "0")

	// 14. write unlock, the last write hold: a downgrade to read, with NO
	// message.
	require.NoError(t, rwB.Write().Unlock(ctxW))
	latch, _ = r.step("14 downgrade", "", writeUnlock(
		cmd("get", anyLatch), cmd("hget", N, "mode"), cmd("hexists", N, W), cmd("hincrby", N, W, "-1"),
		cmd("hdel", N, W), cmd("hlen", N), cmd("hset", N, "mode", "read"), cmd("set", anyLatch, "1", "px", latchMillis)))
	r.latch(gate, latch, "1")
	assert.Equal(t, map[string]string{"mode": "read", B3: "1"}, ctl.hash(N))
	assert.False(t, is(rwB.Write().IsLocked(ctxW)))

	// 15. B:3 read unlock: DEL, "0".
	require.NoError(t, rwB.Read().Unlock(ctxW))
	latch, _ = r.step("15 read unlock after downgrade", "0", readUnlock(B3,
		cmd("get", anyLatch), cmd("hget", N, "mode"), cmd("hexists", N, B3), cmd("hincrby", N, B3, "-1"),
		cmd("hdel", N, B3), cmd("del", TW+":1"), cmd("hlen", N), cmd("del", N), cmd(pub, ch, "0"),
		cmd("set", anyLatch, "1", "px", latchMillis)))
	r.latch(gate, latch, "1")
	assert.Zero(t, ctl.int("EXISTS", N))

	// 16. writer lock + unlock: the release publishes "1".
	require.NoError(t, rwB.Write().LockLease(ctxW, 10*time.Second))
	r.step("16 write lock with lease", "", run(script.RWWriteAcquire(), ks(N), argv(leaseMillis, W),
		cmd("hget", N, "mode"), cmd("hset", N, "mode", "write"), cmd("hset", N, W, "1"), cmd("pexpire", N, leaseMillis)))
	r.pttl(N, 10*time.Second-ttlSlack, 10*time.Second)
	require.NoError(t, rwB.Write().Unlock(ctxW))
	latch, _ = r.step("16b write release", "1", writeUnlock(
		cmd("get", anyLatch), cmd("hget", N, "mode"), cmd("hexists", N, W), cmd("hincrby", N, W, "-1"),
		cmd("hdel", N, W), cmd("hlen", N), cmd("del", N), cmd(pub, ch, "1"), cmd("set", anyLatch, "1", "px", latchMillis)))
	r.latch(gate, latch, "1")

	// 16c. W holds the write lock; W2 (W's Client) waits for it; W's unlock
	// passes it to W2 in its own script: no DEL, no message, latch "2".
	require.NoError(t, rwB.Write().Lock(ctxW))
	r.step("16c write lock", "", run(script.RWWriteAcquire(), ks(N), argv(watchdogMillis, W),
		cmd("hget", N, "mode"), cmd("hset", N, "mode", "write"), cmd("hset", N, W, "1"), cmd("pexpire", N, watchdogMillis)))
	ctxW2 := interlock.WithOwner(ctx, 8)
	B8, err := b.Owner(ctxW2)
	require.NoError(t, err)
	W2 := B8 + ":write"
	w2 := make(chan error, 1)
	go func() { w2 <- rwB.Write().Lock(ctxW2) }()
	require.Eventually(t, func() bool { return runtime.Of(b).Transfers.Offers() == 1 }, 10*time.Second, time.Millisecond, "W2 never stood ready")
	busyW2 := run(script.RWWriteAcquire(), ks(N), argv(watchdogMillis, W2), cmd("hget", N, "mode"), cmd("hexists", N, W2), cmd("pttl", N))
	r.step("16d W2 waits", "", busyW2, busyW2)
	require.NoError(t, rwB.Write().Unlock(ctxW))
	require.NoError(t, <-w2)
	latch, _ = r.step("16e write transfer", "", run(script.RWWriteTransfer(), ks(N, anyLatch, ch),
		argv(watchdogMillis, W, latchMillis, W2, watchdogMillis, pub, "0"),
		cmd("get", anyLatch), cmd("hget", N, "mode"), cmd("hexists", N, W), cmd("hincrby", N, W, "-1"),
		cmd("hdel", N, W), cmd("hlen", N), cmd("hset", N, W2, "1"), cmd("pexpire", N, watchdogMillis),
		cmd("set", anyLatch, "2", "px", latchMillis)))
	assert.Equal(t, map[string]string{"mode": "write", W2: "1"}, ctl.hash(N))
	r.latch(gate, latch, "2")
	require.NoError(t, rwB.Write().Unlock(ctxW2))
	latch, _ = r.step("16f W2 write release", "1", run(script.RWWriteUnlock(), ks(N, ch, anyLatch), argv("1", watchdogMillis, W2, pub, latchMillis),
		cmd("get", anyLatch), cmd("hget", N, "mode"), cmd("hexists", N, W2), cmd("hincrby", N, W2, "-1"),
		cmd("hdel", N, W2), cmd("hlen", N), cmd("del", N), cmd(pub, ch, "1"), cmd("set", anyLatch, "1", "px", latchMillis)))
	r.latch(gate, latch, "1")

	// 17. unlocks of a missing lock: "not held", yet Redisson's scripts
	// publish ("1" for write, "0" for read). Redisson writes latch 1 and
	// reports success; interlock writes -1, so that a resend after a lost
	// reply reads "not held" back.
	require.ErrorIs(t, rwB.Write().Unlock(ctxW), interlock.ErrNotHeld)
	latch, _ = r.step("17 write unlock, missing", "1", writeUnlock(
		cmd("get", anyLatch), cmd("hget", N, "mode"), cmd(pub, ch, "1"), cmd("set", anyLatch, "-1", "px", latchMillis)))
	r.latch(gate, latch, "-1")
	require.ErrorIs(t, rwA.Read().Unlock(ctxA), interlock.ErrNotHeld)
	latch, _ = r.step("17b read unlock, missing", "0", readUnlock(A,
		cmd("get", anyLatch), cmd("hget", N, "mode"), cmd(pub, ch, "0"), cmd("set", anyLatch, "-1", "px", latchMillis)))
	r.latch(gate, latch, "-1")

	// 18. Not the owner: a reader that does not read, a writer that does
	// not write. Nothing changes, nothing is published, no latch. The
	// read hold must outlive steps 18b to 19b, whatever the machine's
	// load: a 10s lease (19b deletes the hash; step 20 overwrites A's
	// timeout key and 20b deletes it).
	require.NoError(t, rwA.Read().LockLease(ctxA, 10*time.Second))
	r.step("18 read with lease", "", readAcq(A, leaseMillis,
		cmd("hget", N, "mode"), cmd("hset", N, "mode", "read"), cmd("hset", N, A, "1"),
		cmd("set", TA+":1", "1"), cmd("pexpire", TA+":1", leaseMillis), cmd("pexpire", N, leaseMillis)))
	require.ErrorIs(t, rwB.Read().Unlock(ctxB), interlock.ErrNotHeld)
	r.step("18b read unlock by B:7", "", readUnlock(B,
		cmd("get", anyLatch), cmd("hget", N, "mode"), cmd("hexists", N, B)))
	require.ErrorIs(t, rwA.Write().Unlock(ctxA), interlock.ErrNotHeld)
	r.step("18c write unlock by a reader", "", run(script.RWWriteUnlock(), ks(N, ch, anyLatch),
		argv("1", watchdogMillis, A+":write", pub, latchMillis),
		cmd("get", anyLatch), cmd("hget", N, "mode")))

	// 19. forceUnlock is mode-specific: the write one leaves a read lock,
	// the read one deletes it and publishes "0" (timeout keys are left to
	// expire); then the mirror image with "1". The Client that forces
	// forgets its own holds on the lock; another Client's hold is lost
	// when its next renewal or its lease says so.
	forced, err := rwB.Write().ForceUnlock(ctxB)
	require.NoError(t, err)
	assert.False(t, forced)
	r.step("19 write force unlock of a read lock", "", run(script.RWForceUnlock(), ks(N, ch), argv("1", pub, "write"),
		cmd("hget", N, "mode")))
	forced, err = rwA.Read().ForceUnlock(ctxA)
	require.NoError(t, err)
	assert.True(t, forced)
	r.step("19b read force unlock", "0", run(script.RWForceUnlock(), ks(N, ch), argv("0", pub, "read"),
		cmd("hget", N, "mode"), cmd("del", N), cmd(pub, ch, "0")))
	require.NoError(t, rwB.Write().LockLease(ctxW, 10*time.Second))
	r.step("19c write lock", "", run(script.RWWriteAcquire(), ks(N), argv(leaseMillis, W),
		cmd("hget", N, "mode"), cmd("hset", N, "mode", "write"), cmd("hset", N, W, "1"), cmd("pexpire", N, leaseMillis)))
	forced, err = rwA.Read().ForceUnlock(ctxA)
	require.NoError(t, err)
	assert.False(t, forced)
	r.step("19d read force unlock of a write lock", "", run(script.RWForceUnlock(), ks(N, ch), argv("0", pub, "read"),
		cmd("hget", N, "mode")))
	forced, err = rwB.Write().ForceUnlock(ctxB)
	require.NoError(t, err)
	assert.True(t, forced)
	r.step("19e write force unlock", "1", run(script.RWForceUnlock(), ks(N, ch), argv("1", pub, "write"),
		cmd("hget", N, "mode"), cmd("del", N), cmd(pub, ch, "1")))

	// 20. Dead-reader cleanup (§7.4): A reads with lease 30000, B with 500;
	// 800ms later A's unlock finds no live timeout and deletes the lock.
	require.NoError(t, rwA.Read().LockLease(ctxA, 30*time.Second))
	require.NoError(t, rwB.Read().LockLease(ctxB, 500*time.Millisecond))
	r.step("20 two readers", "",
		readAcq(A, "30000", cmd("hget", N, "mode"), cmd("hset", N, "mode", "read"), cmd("hset", N, A, "1"),
			cmd("set", TA+":1", "1"), cmd("pexpire", TA+":1", "30000"), cmd("pexpire", N, "30000")),
		readAcq(B, "500", cmd("hget", N, "mode"), cmd("hincrby", N, B, "1"), cmd("set", TB+":1", "1"),
			cmd("pexpire", TB+":1", "500"), cmd("pttl", N), cmd("pexpire", N, rwAnyMillis)))
	time.Sleep(800 * time.Millisecond)
	assert.Zero(t, ctl.int("EXISTS", TB+":1"), "B's timeout expired")
	assert.Equal(t, map[string]string{"mode": "read", A: "1", B: "1"}, ctl.hash(N), "B's field stays")
	require.NoError(t, rwA.Read().Unlock(ctxA))
	latch, _ = r.step("20b dead-reader cleanup", "0", readUnlock(A,
		cmd("get", anyLatch), cmd("hget", N, "mode"), cmd("hexists", N, A), cmd("hincrby", N, A, "-1"),
		cmd("hdel", N, A), cmd("del", TA+":1"), cmd("hlen", N), cmd("hkeys", N), cmd("hget", N, "mode"),
		cmd("hget", N, B), cmd("pttl", TB+":1"), cmd("del", N), cmd(pub, ch, "0"),
		cmd("set", anyLatch, "1", "px", latchMillis)))
	r.latch(gate, latch, "1")
	assert.Zero(t, ctl.int("EXISTS", N))
	// B's unlock finds no lock: "not held", and Redisson's "0" again.
	require.ErrorIs(t, rwB.Read().Unlock(ctxB), interlock.ErrNotHeld)
	latch, _ = r.step("20c dead reader's unlock", "0", readUnlock(B,
		cmd("get", anyLatch), cmd("hget", N, "mode"), cmd(pub, ch, "0"), cmd("set", anyLatch, "-1", "px", latchMillis)))
	r.latch(gate, latch, "-1")

	// 21. A bad name is refused before anything is sent.
	bad := rwlock.New(a, "a{"+unique("b"))
	require.ErrorIs(t, bad.Read().Lock(ctxA), interlock.ErrInvalid)
	require.ErrorIs(t, bad.Write().Unlock(ctxA), interlock.ErrInvalid)
	r.step("21 invalid name", "")

	// Nothing is left.
	gate.release()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var left []string
		for _, addr := range env.nodes {
			c := ctl
			if addr != env.node {
				c = dial(t, addr)
			}
			left = append(left, c.scan("*"+n.unique+"*")...)
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("keys left behind: %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
	assert.Zero(t, a.Stats().Holds+b.Stats().Holds, "renewal entries left")
}

// TestGoldenRWStandalone runs §15.4/§15.5 on a standalone server (classic
// pub/sub): a PSUBSCRIBE tap sees each release, an SSUBSCRIBE tap nothing.
func TestGoldenRWStandalone(t *testing.T) {
	addr := monitoredStandalone(t)
	rc := redistest.NewClient(t, addr)
	for _, n := range rwGoldenNames() {
		t.Run(n.label, func(t *testing.T) {
			runRWGolden(t, rwEnv{
				rc:      rc,
				node:    addr,
				nodes:   []string{addr},
				sharded: false,
				taps: func(t *testing.T, n rwNames) []*pubTap {
					return standaloneTaps(t, addr, n.name, n.unique, n.channel)
				},
			}, n)
		})
	}
}

// TestGoldenRWCluster runs the same on the three-master cluster, where the
// releases are SPUBLISHed (PUBLISHed on Redis 6): the taps of clusterTaps
// on the slot's node see them.
func TestGoldenRWCluster(t *testing.T) {
	cl := monitoredCluster(t)
	rc := cl.Client(t)
	for _, n := range rwGoldenNames() {
		t.Run(n.label, func(t *testing.T) {
			node := cl.NodeForKey(n.name).Addr()
			runRWGolden(t, rwEnv{
				rc:      rc,
				node:    node,
				nodes:   cl.Addrs(),
				sharded: shardedPubSub(t, node),
				taps: func(t *testing.T, n rwNames) []*pubTap {
					return clusterTaps(t, node, n.name, n.channel)
				},
			}, n)
		})
	}
}

// TestGoldenRWWatchdog captures, with MONITOR, what the Client's own
// watchdog sends in one tick for a lock it reads twice and another it
// writes: Redisson 4.4+'s ReadLockTask layout (KEYS [N, {N}], ARGV [lease,
// 1, owner]) renewing the hash and our two timeout keys only, not a
// foreign reader's, and the LockTask for the writer "<owner>:write".
func TestGoldenRWWatchdog(t *testing.T) {
	addr := monitoredStandalone(t)
	// Short, so that a tick comes within a second, and long enough that a
	// loaded machine's late tick cannot let the holds expire first (the
	// renewal scripts would then run other commands).
	const watchdog = 3 * time.Second
	lease := strconv.FormatInt(watchdog.Milliseconds(), 10)
	ctx := testCtx(t, time.Minute)
	rc := redistest.NewClient(t, addr)
	c := newLockClient(t, rc, interlock.WithWatchdogTimeout(watchdog))
	foreign := newLockClient(t, rc)
	n := rwGoldenNames()[0]
	N, P := n.name, n.prefix
	Nw := unique("myRWw")
	me := interlock.WithOwner(ctx, 1)
	O, err := c.Owner(me)
	require.NoError(t, err)
	F, err := foreign.Owner(interlock.WithOwner(ctx, 1))
	require.NoError(t, err)

	require.NoError(t, rwlock.New(foreign, N).Read().LockLease(interlock.WithOwner(ctx, 1), 20*time.Second))
	ctl := dial(t, addr)
	mon := openMonitor(t, addr)
	require.NoError(t, rwlock.New(c, N).Read().Lock(me))
	require.NoError(t, rwlock.New(c, N).Read().Lock(me))
	require.NoError(t, rwlock.New(c, Nw).Write().Lock(me))

	// Wait for one tick that renews both.
	var read, write *scriptRun
	deadline := time.After(10 * time.Second)
	for read == nil || write == nil {
		select {
		case <-deadline:
			t.Fatal("no renewal tick seen")
		case <-time.After(50 * time.Millisecond):
		}
		mark := "compat-rw-watchdog-" + strconv.FormatInt(time.Now().UnixNano(), 10)
		ctl.do("ECHO", mark)
		for _, g := range scriptRuns(mon.untilEcho(t, mark)) {
			switch g.Script {
			case script.RWRenewRead().Name():
				read = &g
			case script.Renew().Name():
				write = &g
			}
		}
	}
	TO := n.timeouts(O)
	assert.Equal(t, run(script.RWRenewRead(), ks(N, P), argv(lease, "1", O),
		cmd("hget", N, O), cmd("pexpire", TO+":2", lease), cmd("pexpire", TO+":1", lease), cmd("pexpire", N, lease)), *read)
	assert.Equal(t, run(script.Renew(), ks(Nw), argv(lease, O+":write"),
		cmd("hexists", Nw, O+":write"), cmd("pexpire", Nw, lease)), *write)
	foreignTTL := ctl.int("PTTL", n.timeouts(F)+":1")
	assert.Greater(t, foreignTTL, int64(watchdog.Milliseconds()), "the foreign reader's timeout key was renewed")

	for range 2 {
		require.NoError(t, rwlock.New(c, N).Read().Unlock(me))
	}
	require.NoError(t, rwlock.New(c, Nw).Write().Unlock(me))
	_, err = rwlock.New(foreign, N).Read().ForceUnlock(ctx)
	require.NoError(t, err)
	ctl.do("DEL", n.timeouts(F)+":1")
}
