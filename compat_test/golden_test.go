package compat_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"
	"sync"
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
	"github.com/interlock-go/interlock/rlock"
)

// Golden tests for the reentrant lock: the §15.1 vector of
// reference/redisson-protocol.md, step by step, with the exact Redis state,
// the commands each script ran (MONITOR) and the messages it published.
// MONITOR shows every client's commands, so these tests, and the fair,
// fenced and read/write ones, run on servers of their own
// (monitoredStandalone, monitoredCluster).

// Tolerances. PTTLs are read a few round trips after the command that set
// them; on a loaded two-core machine with -race that can take a while.
const (
	ttlSlack      = 3000 * time.Millisecond // how far below its lease a fresh PTTL may be
	latchGone     = 3 * time.Second         // how soon the deleter must remove a latch (loaded CI)
	markerTimeout = 10 * time.Second        // how long a tap may take to see a marker
	classicSettle = 300 * time.Millisecond  // how long a tap that must see nothing is given
	// guardEnds is how soon a guard must end once its Client has let the
	// hold go: well below the 10s renewal tick (watchdog/3) that would
	// otherwise be the first to notice, and seconds above a loaded
	// machine's late wake-ups.
	guardEnds      = 5 * time.Second
	watchdogMillis = "30000"
	leaseMillis    = "10000"
	latchMillis    = "20000"
)

// anyLatch stands, in an expected command, for the unlock latch key of the
// step, whose request id is random.
const anyLatch = "\x00latch"

// ownerRE matches an owner string "<uuid v4>:<id>" (§1.1, §1.2).
var ownerRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}:[1-9][0-9]*$`)

// scriptRun is one script execution seen by MONITOR: the script (the
// script.Script name, found by SHA1), its KEYS and ARGV, and the commands it
// ran.
type scriptRun struct {
	Script string
	Keys   []string
	Argv   []string
	Cmds   [][]string
}

func run(s *script.Script, keys, argv []string, cmds ...[]string) scriptRun {
	return scriptRun{Script: s.Name(), Keys: keys, Argv: argv, Cmds: cmds}
}

// cmd, ks and argv build the string lists of a scriptRun.
func cmd(args ...string) []string  { return args }
func ks(keys ...string) []string   { return keys }
func argv(args ...string) []string { return args }

// lists returns every string list of r, for walking them in order.
func (r *scriptRun) lists() [][]string {
	return append([][]string{r.Keys, r.Argv}, r.Cmds...)
}

// scriptsBySHA maps the SHA1 of every embedded script to its name.
var scriptsBySHA = func() map[string]string {
	m := make(map[string]string)
	for _, s := range script.All() {
		m[s.SHA1()] = s.Name()
	}
	return m
}()

// scriptRuns groups MONITOR lines into script executions: an EVAL or
// EVALSHA line followed by the "lua" lines of the commands it ran. Calls
// that ran nothing (an EVALSHA answered NOSCRIPT) are left out.
func scriptRuns(lines []monLine) []scriptRun {
	var runs []scriptRun
	cur := -1
	for _, l := range lines {
		if l.Client == "lua" {
			if cur < 0 {
				runs = append(runs, scriptRun{Script: "<no EVAL line>"})
				cur = len(runs) - 1
			}
			runs[cur].Cmds = append(runs[cur].Cmds, l.Args)
			continue
		}
		cur = -1
		if len(l.Args) < 2 {
			continue
		}
		var sha string
		switch strings.ToLower(l.Args[0]) {
		case "evalsha":
			sha = strings.ToLower(l.Args[1])
		case "eval":
			sum := sha1.Sum([]byte(l.Args[1]))
			sha = hex.EncodeToString(sum[:])
		default:
			continue
		}
		name, ok := scriptsBySHA[sha]
		if !ok {
			name = "<unknown script " + sha + ">"
		}
		r := scriptRun{Script: name}
		if len(l.Args) > 2 {
			if nk, err := strconv.Atoi(l.Args[2]); err == nil && nk >= 0 && 3+nk <= len(l.Args) {
				r.Keys, r.Argv = l.Args[3:3+nk], l.Args[3+nk:]
			}
		}
		runs = append(runs, r)
		cur = len(runs) - 1
	}
	kept := runs[:0]
	for _, r := range runs {
		if len(r.Cmds) > 0 {
			kept = append(kept, r)
		}
	}
	return kept
}

// gatedDeletes wraps the rueidis client that interlock runs on and can hold
// back the DEL commands the Client sends for its latches: alone (its
// sweep), or ahead of a script (the script then goes at once). Holding them lets a test read a latch key
// right after an unlock, then release the deleter and time the deletion.
// Everything else passes through untouched.
type gatedDeletes struct {
	rueidis.Client
	mu   sync.Mutex
	gate chan struct{}  // nil: open
	held sync.WaitGroup // DELs that rode on a script, sent once the gate opens
}

// newGatedDeletes wraps rc; the test's end opens the gate and waits for
// the DELs it held.
func newGatedDeletes(t *testing.T, rc rueidis.Client) *gatedDeletes {
	g := &gatedDeletes{Client: rc}
	t.Cleanup(func() {
		g.release()
		g.held.Wait()
	})
	return g
}

func (g *gatedDeletes) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gate == nil {
		g.gate = make(chan struct{})
	}
}

func (g *gatedDeletes) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gate != nil {
		close(g.gate)
		g.gate = nil
	}
}

func (g *gatedDeletes) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	dels := 0
	for dels < len(multi) && redistest.IsCommand(multi[dels], "DEL") {
		dels++
	}
	g.mu.Lock()
	gate := g.gate
	g.mu.Unlock()
	if dels == 0 || gate == nil {
		return g.Client.DoMulti(ctx, multi...)
	}
	held := multi[:dels]
	if dels < len(multi) {
		// Deletions riding on a script: the script goes now, the DELs
		// once the gate opens (their replies are not read).
		g.held.Go(func() {
			<-gate
			g.Client.DoMulti(context.Background(), held...)
		})
		ok := make([]rueidis.RedisResult, dels, len(multi))
		for i := range ok {
			ok[i] = rueidis.NewErrorResult(nil)
		}
		return append(ok, g.Client.DoMulti(ctx, multi[dels:]...)...)
	}
	// The test releases the gate once it has read the latch, which on a
	// loaded machine can be after the batch's own deadline (a second): the
	// held batch then goes out on a fresh one, as if the network had
	// delayed it.
	<-gate
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return g.Client.DoMulti(sctx, multi...)
}

// pubTap is a subscriber connection that watches a lock's channel, plus a
// marker channel on which the test publishes a step number to learn that
// every earlier message has been delivered.
type pubTap struct {
	label    string
	s        *stream
	kind     string // message kind a release would arrive as
	receives bool   // whether the lock's release messages must reach it
	markCmd  string // PUBLISH or SPUBLISH
	markChan string
	settle   time.Duration // pause before marking a step that publishes
}

// step returns the messages delivered to the tap since the previous step.
func (p *pubTap) step(t *testing.T, ctl *conn, n int, publishes bool) []pubMsg {
	t.Helper()
	if publishes && p.settle > 0 {
		time.Sleep(p.settle)
	}
	mark := strconv.Itoa(n)
	ctl.do(p.markCmd, p.markChan, mark)
	vals := p.s.until(t, markerTimeout, func(v any) bool {
		m, ok := asPubMsg(v)
		return ok && m.Channel == p.markChan && m.Payload == mark
	})
	msgs := make([]pubMsg, 0, len(vals))
	for _, v := range vals {
		m, ok := asPubMsg(v)
		if !ok {
			t.Fatalf("%s tap: unexpected push %#v", p.label, v)
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// lockNames describes a lock name and the derived names §1.4 gives it,
// spelled out by hand rather than computed with internal/keys.
type lockNames struct {
	label       string
	name        string
	channel     string
	latchPrefix string // the latch key without its 32-hex request id
	other       string // a second lock name in the same slot
	unique      string // a substring of every key and channel of the lock
}

// goldenNames returns a "myLock"-style name (no braces: the derived keys
// add them) and an "{order}:42"-style one (the name's own hash tag is kept).
func goldenNames() []lockNames {
	plain := unique("myLock")
	tag := unique("order")
	braced := "{" + tag + "}:42"
	return []lockNames{{
		label:       "plain",
		name:        plain,
		channel:     "redisson_lock__channel:{" + plain + "}",
		latchPrefix: "redisson_unlock_latch:{" + plain + "}:",
		other:       "{" + plain + "}:other",
		unique:      plain,
	}, {
		label:       "braced",
		name:        braced,
		channel:     "redisson_lock__channel:{" + tag + "}:42",
		latchPrefix: "redisson_unlock_latch:{" + tag + "}:42:",
		other:       "{" + tag + "}:other",
		unique:      tag,
	}}
}

// goldenEnv is where a golden run happens.
type goldenEnv struct {
	rc      rueidis.Client
	node    string   // the node that owns the lock's slot
	nodes   []string // every node, for the final scan
	sharded bool     // the pub/sub mode PubSubAuto must pick
	taps    func(t *testing.T, n lockNames) []*pubTap
}

// recorder checks one step at a time: the script runs MONITOR saw and the
// messages each tap received since the previous step.
type recorder struct {
	t       *testing.T
	ctl     *conn
	mon     *monitor
	taps    []*pubTap
	n       int
	latchRE *regexp.Regexp
	channel string
}

// step checks the step just done. want lists the scripts it ran; publishes
// says whether it released the lock (one "0" on the channel). It returns
// the latch key the step used ("" if none) and the other commands the node
// received during the step.
func (r *recorder) step(label string, publishes bool, want ...scriptRun) (latch string, other []monLine) {
	t := r.t
	t.Helper()
	r.n++
	for _, p := range r.taps {
		got := p.step(t, r.ctl, r.n, publishes)
		var expect []pubMsg
		if publishes && p.receives {
			expect = []pubMsg{{Kind: p.kind, Channel: r.channel, Payload: "0"}}
		}
		if len(expect) == 0 && len(got) == 0 {
			continue
		}
		assert.Equal(t, expect, got, "step %d (%s): messages seen by the %s tap", r.n, label, p.label)
	}

	mark := "compat-step-" + strconv.Itoa(r.n)
	r.ctl.do("ECHO", mark)
	lines := r.mon.untilEcho(t, mark, want...)
	for _, l := range lines {
		if l.Client != "lua" && len(l.Args) > 0 && !strings.EqualFold(l.Args[0], "evalsha") && !strings.EqualFold(l.Args[0], "eval") {
			other = append(other, l)
		}
	}
	got := scriptRuns(lines)

	// Resolve the latch placeholder to the key the step actually used,
	// provided it has the §1.4/§1.6 shape.
	for i := range want {
		if i >= len(got) {
			break
		}
		gl := got[i].lists()
		for j, c := range want[i].lists() {
			for k, a := range c {
				if a == anyLatch && latch == "" && j < len(gl) && k < len(gl[j]) && r.latchRE.MatchString(gl[j][k]) {
					latch = gl[j][k]
				}
			}
		}
	}
	resolve := func(c []string) []string {
		out := make([]string, len(c))
		for k, a := range c {
			if a == anyLatch {
				a = latch
				if a == "" {
					a = "<a latch key matching " + r.latchRE.String() + ">"
				}
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
		return latch, other
	}
	if !assert.Equal(t, resolved, got, "step %d (%s): commands run by scripts", r.n, label) {
		for _, l := range lines {
			t.Logf("  MONITOR %s", l)
		}
	}
	return latch, other
}

func (r *recorder) pttlWithin(key string, lease time.Duration) {
	r.t.Helper()
	got := time.Duration(r.ctl.int("PTTL", key)) * time.Millisecond
	assert.True(r.t, got <= lease && got > lease-ttlSlack, "PTTL %s = %v, want within (%v, %v]", key, got, lease-ttlSlack, lease)
}

// latchDeleted releases the gate and asserts that the Client's deleter
// removes latch within latchGone; it returns how long that took.
func (r *recorder) latchDeleted(gate *gatedDeletes, latch string) time.Duration {
	r.t.Helper()
	start := time.Now()
	gate.release()
	for r.ctl.int("EXISTS", latch) == 1 {
		if time.Since(start) > latchGone {
			r.t.Fatalf("latch %s still present %v after the deleter was released", latch, latchGone)
		}
		time.Sleep(2 * time.Millisecond)
	}
	return time.Since(start)
}

// runGolden drives §15.1 through rlock, with A = client a, owner id 1 and
// B = client b, owner id 1, and checks every step.
func runGolden(t *testing.T, env goldenEnv, n lockNames) {
	ctx := testCtx(t, 2*time.Minute)
	N, ch := n.name, n.channel

	// §1.4: derived names, and one slot for all of a lock's keys.
	require.Equal(t, ch, keys.LockChannel(N), "channel of %q", N)
	require.NoError(t, keys.Check(N))
	slot := keys.Slot(N)
	require.Equal(t, slot, keys.Slot(ch), "slot of %s", ch)
	require.Equal(t, slot, keys.Slot(n.other), "slot of %s", n.other)
	latchRE := regexp.MustCompile("^" + regexp.QuoteMeta(n.latchPrefix) + "[0-9a-f]{32}$")

	gate := newGatedDeletes(t, env.rc)
	a := newLockClient(t, gate)
	b := newLockClient(t, gate)
	t.Cleanup(gate.release) // runs before the Clients close

	sharded, err := runtime.Of(a).Sharded(ctx)
	require.NoError(t, err)
	require.Equal(t, env.sharded, sharded, "Sharded() with PubSubAuto")
	pub, err := runtime.Of(a).PublishCommand(ctx)
	require.NoError(t, err)
	wantPub := map[bool]string{false: "PUBLISH", true: "SPUBLISH"}[env.sharded]
	require.Equal(t, wantPub, pub)

	ctxA := interlock.WithOwner(ctx, 1)
	ctxB := interlock.WithOwner(ctx, 1)
	A, err := a.Owner(ctxA)
	require.NoError(t, err)
	B, err := b.Owner(ctxB)
	require.NoError(t, err)
	require.Regexp(t, ownerRE, A)
	require.Regexp(t, ownerRE, B)
	require.Equal(t, a.ID()+":1", A)
	require.NotEqual(t, A, B)
	mA, mB := rlock.New(a, N), rlock.New(b, N)

	ctl := dial(t, env.node)
	cluster := len(env.nodes) > 1
	if cluster {
		for _, k := range []string{N, ch, n.latchPrefix + "0f6b3c1e9a2d4b7c8e1f2a3b4c5d6e7f", n.other} {
			assert.Equal(t, int64(slot), ctl.int("CLUSTER", "KEYSLOT", k), "CLUSTER KEYSLOT %s", k)
		}
	}
	r := &recorder{t: t, ctl: ctl, taps: env.taps(t, n), latchRE: latchRE, channel: ch}
	r.mon = openMonitor(t, env.node)
	require.Empty(t, ctl.hash(N))

	holdCount := func(ctx context.Context, m *rlock.Mutex) int {
		t.Helper()
		c, err := m.HoldCount(ctx)
		require.NoError(t, err)
		return c
	}

	// 1. A:1 lock() (watchdog).
	require.NoError(t, mA.Lock(ctxA))
	r.step("1 lock", false, run(script.Acquire(), ks(N), argv(watchdogMillis, A),
		cmd("exists", N), cmd("hincrby", N, A, "1"), cmd("pexpire", N, watchdogMillis)))
	assert.Equal(t, map[string]string{A: "1"}, ctl.hash(N))
	r.pttlWithin(N, 30*time.Second)
	assert.Equal(t, 1, holdCount(ctxA, mA))
	locked, err := mA.IsLocked(ctxA)
	require.NoError(t, err)
	assert.True(t, locked)
	ttl, err := mA.TTL(ctxA)
	require.NoError(t, err)
	assert.InDelta(t, float64(30*time.Second), float64(ttl), float64(ttlSlack))
	guard := mA.Guard(ctxA)
	require.NoError(t, guard.Err())

	// 2. A:1 re-enters.
	require.NoError(t, mA.Lock(ctxA))
	r.step("2 re-enter", false, run(script.Acquire(), ks(N), argv(watchdogMillis, A),
		cmd("exists", N), cmd("hexists", N, A), cmd("hincrby", N, A, "1"), cmd("pexpire", N, watchdogMillis)))
	assert.Equal(t, map[string]string{A: "2"}, ctl.hash(N))
	assert.Equal(t, 2, holdCount(ctxA, mA))

	// 3. B:1 tryLock: busy. Then the same script directly, for its reply.
	ok, err := mB.TryLock(ctxB, 0, 0)
	require.NoError(t, err)
	assert.False(t, ok, "B acquired a lock A holds")
	left, err := script.Acquire().Exec(ctx, env.rc, []string{N}, []string{watchdogMillis, B}).AsInt64()
	require.NoError(t, err)
	assert.True(t, left > (30*time.Second-ttlSlack).Milliseconds() && left <= 30000, "busy acquire returned %d, want the holder's PTTL", left)
	busy := run(script.Acquire(), ks(N), argv(watchdogMillis, B), cmd("exists", N), cmd("hexists", N, B), cmd("pttl", N))
	r.step("3 busy", false, busy, busy)
	assert.Equal(t, map[string]string{A: "2"}, ctl.hash(N))
	held, err := mB.IsHeld(ctxB)
	require.NoError(t, err)
	assert.False(t, held)

	// 4. The watchdog's script, alone and in a batch of two.
	ctl.do("PEXPIRE", N, "5000")
	renewed, err := script.Renew().Exec(ctx, env.rc, []string{N}, []string{watchdogMillis, A}).AsIntSlice()
	require.NoError(t, err)
	assert.Equal(t, []int64{1}, renewed)
	r.pttlWithin(N, 30*time.Second)
	renewed, err = script.Renew().Exec(ctx, env.rc, []string{N, n.other}, []string{watchdogMillis, A, A}).AsIntSlice()
	require.NoError(t, err)
	assert.Equal(t, []int64{1, 0}, renewed)
	r.step("4 renew", false,
		run(script.Renew(), ks(N), argv(watchdogMillis, A),
			cmd("hexists", N, A), cmd("pexpire", N, watchdogMillis)),
		run(script.Renew(), ks(N, n.other), argv(watchdogMillis, A, A),
			cmd("hexists", N, A), cmd("pexpire", N, watchdogMillis), cmd("hexists", n.other, A)))
	assert.Zero(t, ctl.int("EXISTS", n.other))

	// 5. A:1 unlock, partial: latch "0".
	gate.hold()
	require.NoError(t, mA.Unlock(ctxA))
	latch, _ := r.step("5 partial unlock", false, run(script.Unlock(),
		ks(N, ch, anyLatch), argv("0", watchdogMillis, A, pub, latchMillis),
		cmd("get", anyLatch), cmd("hexists", N, A), cmd("hincrby", N, A, "-1"),
		cmd("pexpire", N, watchdogMillis), cmd("set", anyLatch, "0", "px", latchMillis)))
	require.Regexp(t, latchRE, latch)
	assert.Equal(t, map[string]string{A: "1"}, ctl.hash(N))
	assert.Equal(t, 1, holdCount(ctxA, mA))
	assert.Equal(t, "0", ctl.str("GET", latch))
	r.pttlWithin(latch, 20*time.Second)
	assert.Equal(t, []string{latch}, ctl.scan(n.latchPrefix+"*"))
	assert.Equal(t, slot, keys.Slot(latch))
	if cluster {
		assert.Equal(t, int64(slot), ctl.int("CLUSTER", "KEYSLOT", latch))
	}
	require.NoError(t, guard.Err(), "a partial unlock ended the guard")

	// 6. Replay of step 5 with the same request id: nothing but the GET.
	replay, err := script.Unlock().Exec(ctx, env.rc, []string{N, ch, latch},
		[]string{"0", watchdogMillis, A, pub, latchMillis}).AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(0), replay)
	r.step("6 replay", false, run(script.Unlock(),
		ks(N, ch, latch), argv("0", watchdogMillis, A, pub, latchMillis),
		cmd("get", latch)))
	assert.Equal(t, map[string]string{A: "1"}, ctl.hash(N))

	// 7. The Client deletes the latch in the background.
	took := r.latchDeleted(gate, latch)
	t.Logf("latch of the partial unlock deleted %v after the deleter was released", took)
	_, other := r.step("7 latch deleted", false)
	assert.True(t, hasCommand(other, "del", latch), "no DEL %s among %v", latch, other)

	// 8. Not the owner: B:1, then A:2. ErrNotHeld, nothing changes, no latch.
	err = mB.Unlock(ctxB)
	require.ErrorIs(t, err, interlock.ErrNotHeld)
	latchB, _ := r.step("8 unlock by B:1", false, run(script.Unlock(),
		ks(N, ch, anyLatch), argv("0", watchdogMillis, B, pub, latchMillis),
		cmd("get", anyLatch), cmd("hexists", N, B)))
	assert.NotEqual(t, latch, latchB, "request ids must differ per unlock")
	ctxA2 := interlock.WithOwner(ctx, 2)
	A2, err := a.Owner(ctxA2)
	require.NoError(t, err)
	require.ErrorIs(t, mA.Unlock(ctxA2), interlock.ErrNotHeld)
	r.step("8b unlock by A:2", false, run(script.Unlock(),
		ks(N, ch, anyLatch), argv("0", watchdogMillis, A2, pub, latchMillis),
		cmd("get", anyLatch), cmd("hexists", N, A2)))
	assert.Equal(t, map[string]string{A: "1"}, ctl.hash(N))
	assert.Equal(t, 1, holdCount(ctxA, mA))
	assert.Empty(t, ctl.scan(n.latchPrefix+"*"), "a not-owner unlock left a latch")
	require.NoError(t, guard.Err(), "another owner's unlock ended A's guard")

	// 9. A:1 unlock, final: DEL, one "0" on the channel, latch "1".
	gate.hold()
	require.NoError(t, mA.Unlock(ctxA))
	latch, _ = r.step("9 final unlock", true, run(script.Unlock(),
		ks(N, ch, anyLatch), argv("0", watchdogMillis, A, pub, latchMillis),
		cmd("get", anyLatch), cmd("hexists", N, A), cmd("hincrby", N, A, "-1"),
		cmd("del", N), cmd(pub, ch, "0"), cmd("set", anyLatch, "1", "px", latchMillis)))
	require.Regexp(t, latchRE, latch)
	assert.Zero(t, ctl.int("EXISTS", N))
	assert.Equal(t, 0, holdCount(ctxA, mA))
	locked, err = mA.IsLocked(ctxA)
	require.NoError(t, err)
	assert.False(t, locked)
	assert.Equal(t, "1", ctl.str("GET", latch))
	r.pttlWithin(latch, 20*time.Second)
	select {
	case <-guard.Done():
		assert.ErrorIs(t, context.Cause(guard), context.Canceled, "guard cause after Unlock")
	case <-time.After(guardEnds):
		t.Error("the guard was not cancelled by the final unlock")
	}
	took = r.latchDeleted(gate, latch)
	t.Logf("latch of the final unlock deleted %v after the deleter was released", took)

	// 10. B:1 lock(10, SECONDS).
	require.NoError(t, mB.LockLease(ctxB, 10*time.Second))
	r.step("10 lock with lease", false, run(script.Acquire(), ks(N), argv(leaseMillis, B),
		cmd("exists", N), cmd("hincrby", N, B, "1"), cmd("pexpire", N, leaseMillis)))
	assert.Equal(t, map[string]string{B: "1"}, ctl.hash(N))
	r.pttlWithin(N, 10*time.Second)

	// 10b. B:1 extends its lease (ours): Redisson's renewal, for one lock,
	// with the new lease.
	require.NoError(t, mB.Extend(ctxB, 20*time.Second))
	r.step("10b extend", false, run(script.Renew(), ks(N), argv("20000", B),
		cmd("hexists", N, B), cmd("pexpire", N, "20000")))
	r.pttlWithin(N, 20*time.Second)

	// 11. forceUnlock (by A, who does not hold it): DEL and "0".
	forced, err := mA.ForceUnlock(ctxA)
	require.NoError(t, err)
	assert.True(t, forced)
	r.step("11 force unlock", true, run(script.ForceUnlock(), ks(N, ch), argv("0", pub),
		cmd("del", N), cmd(pub, ch, "0")))
	assert.Zero(t, ctl.int("EXISTS", N))

	// 12. forceUnlock of a free lock: nothing to delete, nothing published.
	forced, err = mA.ForceUnlock(ctxA)
	require.NoError(t, err)
	assert.False(t, forced)
	r.step("12 force unlock, free", false, run(script.ForceUnlock(), ks(N, ch), argv("0", pub),
		cmd("del", N)))

	// 13. A name whose derived keys would leave its slot is refused before
	// anything is sent.
	bad := rlock.New(a, "a{"+unique("b"))
	require.ErrorIs(t, bad.Lock(ctxA), interlock.ErrInvalid)
	require.ErrorIs(t, bad.Unlock(ctxA), interlock.ErrInvalid)
	r.step("13 invalid name", false)

	// 14–18: the transfer to a waiter of the same Client.
	runGoldenTransfer(t, r, env.rc, gate, a, n, holdCount)

	// Nothing at all is left of the lock.
	for _, addr := range env.nodes {
		c := ctl
		if addr != env.node {
			c = dial(t, addr)
		}
		assert.Empty(t, c.scan("*"+n.unique+"*"), "keys left on %s", addr)
	}
}

// runGoldenTransfer: A:1 holds, A:2 waits on the same Client, and A:1's
// unlock passes the lock to A:2 in its own script: no DEL, no message,
// latch "2:0"; a replay reads it back; A:2's own unlock is a real release.
func runGoldenTransfer(t *testing.T, r *recorder, rc rueidis.Client, gate *gatedDeletes, a *interlock.Client, n lockNames, holdCount func(context.Context, *rlock.Mutex) int) {
	ctx := testCtx(t, time.Minute)
	N, ch, ctl := n.name, n.channel, r.ctl
	pub, err := runtime.Of(a).PublishCommand(ctx)
	require.NoError(t, err)
	ctxA, ctxA2 := interlock.WithOwner(ctx, 1), interlock.WithOwner(ctx, 2)
	A, err := a.Owner(ctxA)
	require.NoError(t, err)
	A2, err := a.Owner(ctxA2)
	require.NoError(t, err)
	mA := rlock.New(a, N)

	// 14. A:1 lock().
	require.NoError(t, mA.Lock(ctxA))
	r.step("14 lock", false, run(script.Acquire(), ks(N), argv(watchdogMillis, A),
		cmd("exists", N), cmd("hincrby", N, A, "1"), cmd("pexpire", N, watchdogMillis)))

	// 15. A:2 lock() waits: a try, the subscription, a try, then it stands
	// ready for a transfer while it waits for a message.
	got := make(chan error, 1)
	go func() { got <- mA.Lock(ctxA2) }()
	require.Eventually(t, func() bool { return runtime.Of(a).Transfers.Offers() == 1 }, 10*time.Second, time.Millisecond, "A:2 never stood ready")
	busy := run(script.Acquire(), ks(N), argv(watchdogMillis, A2), cmd("exists", N), cmd("hexists", N, A2), cmd("pttl", N))
	r.step("15 A:2 waits", false, busy, busy)

	// 16. A:1 unlock: the transfer.
	gate.hold()
	require.NoError(t, mA.Unlock(ctxA))
	latch, _ := r.step("16 transfer", false, run(script.Transfer(),
		ks(N, anyLatch, ch), argv(watchdogMillis, A, latchMillis, A2, watchdogMillis, pub, "0"),
		cmd("get", anyLatch), cmd("hexists", N, A), cmd("hincrby", N, A, "-1"), cmd("hdel", N, A),
		cmd("hset", N, A2, "1"), cmd("pexpire", N, watchdogMillis), cmd("set", anyLatch, "2:0", "px", latchMillis)))
	require.Regexp(t, r.latchRE, latch)
	select {
	case err := <-got:
		require.NoError(t, err, "A:2's Lock")
	case <-time.After(10 * time.Second):
		t.Fatal("A:2's Lock did not return after the transfer")
	}
	assert.Equal(t, map[string]string{A2: "1"}, ctl.hash(N))
	r.pttlWithin(N, 30*time.Second)
	assert.Equal(t, 1, holdCount(ctxA2, mA))
	assert.Equal(t, 0, holdCount(ctxA, mA))
	assert.Equal(t, "2:0", ctl.str("GET", latch))
	assert.Equal(t, uint64(1), a.Stats().Transfers)

	// 17. Replay of step 16: {2, 0} read back from the latch, nothing else.
	replay, err := script.Transfer().Exec(ctx, rc, []string{N, latch, ch},
		[]string{watchdogMillis, A, latchMillis, A2, watchdogMillis, pub, "0"}).AsIntSlice()
	require.NoError(t, err)
	assert.Equal(t, []int64{2, 0}, replay)
	r.step("17 replay", false, run(script.Transfer(),
		ks(N, latch, ch), argv(watchdogMillis, A, latchMillis, A2, watchdogMillis, pub, "0"), cmd("get", latch)))
	assert.Equal(t, map[string]string{A2: "1"}, ctl.hash(N))
	r.latchDeleted(gate, latch)
	r.step("17b latch deleted", false)

	// 18. A:2 unlock, nobody waiting: a real release.
	require.NoError(t, mA.Unlock(ctxA2))
	r.step("18 final unlock", true, run(script.Unlock(),
		ks(N, ch, anyLatch), argv("0", watchdogMillis, A2, pub, latchMillis),
		cmd("get", anyLatch), cmd("hexists", N, A2), cmd("hincrby", N, A2, "-1"),
		cmd("del", N), cmd(pub, ch, "0"), cmd("set", anyLatch, "1", "px", latchMillis)))
	assert.Zero(t, ctl.int("EXISTS", N))
	assert.False(t, runtime.Of(a).Transfers.Standing(), "a line is left")
}

// hasCommand reports whether lines hold a command (any case) with exactly
// these arguments.
func hasCommand(lines []monLine, name string, args ...string) bool {
	for _, l := range lines {
		if len(l.Args) == len(args)+1 && strings.EqualFold(l.Args[0], name) && equalStrings(l.Args[1:], args) {
			return true
		}
	}
	return false
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestGoldenRLockStandalone runs §15.1 on a standalone server, where
// PubSubAuto must pick classic pub/sub: a PSUBSCRIBE tap sees each release,
// an SSUBSCRIBE tap on the same channel sees nothing (standaloneTaps).
func TestGoldenRLockStandalone(t *testing.T) {
	addr := monitoredStandalone(t)
	rc := redistest.NewClient(t, addr)
	for _, n := range goldenNames() {
		t.Run(n.label, func(t *testing.T) {
			runGolden(t, goldenEnv{
				rc:      rc,
				node:    addr,
				nodes:   []string{addr},
				sharded: false,
				taps: func(t *testing.T, n lockNames) []*pubTap {
					return standaloneTaps(t, addr, n.name, n.name, n.channel)
				},
			}, n)
		})
	}
}

// TestGoldenRLockCluster runs §15.1 on a three-master cluster, where
// PubSubAuto must pick sharded pub/sub (§2.5, §15.7): releases are sent
// with SPUBLISH, so an SSUBSCRIBE tap on the node that owns the slot sees
// them and a classic SUBSCRIBE tap on the same channel name does not. On
// Redis 6, which has no sharded pub/sub, it picks classic pub/sub instead
// (clusterTaps).
func TestGoldenRLockCluster(t *testing.T) {
	cl := monitoredCluster(t)
	rc := cl.Client(t)
	for _, n := range goldenNames() {
		t.Run(n.label, func(t *testing.T) {
			node := cl.NodeForKey(n.name).Addr()
			runGolden(t, goldenEnv{
				rc:      rc,
				node:    node,
				nodes:   cl.Addrs(),
				sharded: shardedPubSub(t, node),
				taps: func(t *testing.T, n lockNames) []*pubTap {
					return clusterTaps(t, node, n.name, n.channel)
				},
			}, n)
		})
	}
}

// TestScriptSHA checks that every embedded script's SHA1 is the one Redis
// computes for it with SCRIPT LOAD, on the standalone server and on every
// cluster node, so that EVALSHA finds what SCRIPT LOAD (or an earlier EVAL)
// cached.
func TestScriptSHA(t *testing.T) {
	parallel(t)
	check := func(t *testing.T, addrs []string) {
		for _, addr := range addrs {
			c := dial(t, addr)
			for _, s := range script.All() {
				assert.Regexp(t, `^[0-9a-f]{40}$`, s.SHA1(), s.Name())
				assert.Equal(t, s.SHA1(), c.str("SCRIPT", "LOAD", s.Source()), "SCRIPT LOAD %s on %s", s.Name(), addr)
			}
		}
	}
	names := map[string]bool{}
	for _, s := range script.All() {
		assert.False(t, names[s.Name()], "duplicate script %s", s.Name())
		names[s.Name()] = true
	}
	t.Run("standalone", func(t *testing.T) { check(t, []string{standaloneAddr}) })
	t.Run("cluster", func(t *testing.T) { check(t, sharedCluster(t).Addrs()) })
}

// TestSlotVectors checks §15.0 with internal/keys and against the
// cluster's own CLUSTER KEYSLOT, and that a name whose derived keys hash
// elsewhere (§1.4 edge) is refused.
func TestSlotVectors(t *testing.T) {
	parallel(t)
	vectors := map[string]uint16{
		"123456789":                       12739,
		"myLock":                          12769,
		"redisson_lock__channel:{myLock}": 12769,
		"redisson_unlock_latch:{myLock}:0f6b3c1e9a2d4b7c8e1f2a3b4c5d6e7f": 12769,
		"{order}:42":                        16025,
		"redisson_lock__channel:{order}:42": 16025,
		"a{b":                               13340,
		"redisson_lock__channel:a{b":        3200,
	}
	for k, want := range vectors {
		assert.Equal(t, want, keys.Slot(k), "keys.Slot(%q)", k)
	}
	assert.Equal(t, "redisson_lock__channel:{myLock}", keys.LockChannel("myLock"))
	assert.Equal(t, "redisson_lock__channel:{order}:42", keys.LockChannel("{order}:42"))
	assert.Equal(t, "redisson_unlock_latch:{myLock}:0f6b3c1e9a2d4b7c8e1f2a3b4c5d6e7f",
		keys.UnlockLatch("myLock", "0f6b3c1e9a2d4b7c8e1f2a3b4c5d6e7f"))
	assert.Equal(t, "redisson_unlock_latch:{order}:42:9c2e4f6a8b0d1e3f5a7c9e1b3d5f7a9c",
		keys.UnlockLatch("{order}:42", "9c2e4f6a8b0d1e3f5a7c9e1b3d5f7a9c"))
	assert.Error(t, keys.Check("a{b"))

	cl := sharedCluster(t)
	c := dial(t, cl.Addrs()[0])
	for k, want := range vectors {
		assert.Equal(t, int64(want), c.int("CLUSTER", "KEYSLOT", k), "CLUSTER KEYSLOT %q", k)
	}
}

// Dedicate dedicates a connection whose renewal rounds and latch sweeps
// go through gatedDeletes's DoMulti (redistest.Aside).
func (g *gatedDeletes) Dedicate() (rueidis.DedicatedClient, func()) {
	dc, release := g.Client.Dedicate()
	return redistest.Aside(dc, g.DoMulti), release
}

// Nodes returns the cluster's nodes, whose renewal rounds and latch sweeps
// go through gatedDeletes's DoMulti too (redistest.AsideNodes).
func (g *gatedDeletes) Nodes() map[string]rueidis.Client {
	return redistest.AsideNodes(g.Client.Nodes(), g.DoMulti)
}
