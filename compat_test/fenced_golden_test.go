package compat_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fenced"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/runtime"
	"github.com/interlock-go/interlock/internal/script"
	"github.com/interlock-go/interlock/rlock"
)

// Golden tests for the fenced lock: the §15.6 vector of
// reference/redisson-protocol.md and Redisson's testTokenIncrease (§8 and
// redisson-scenarios.md §1.4, §3.E), step by step, with the exact Redis
// state, the commands each script ran (MONITOR) and the messages it
// published. Tokens go 1 to 5 across LockToken, a re-entry through
// TryLockToken, LockLeaseToken, Lock and TryLock after unlocks; failed
// attempts take none; at the end only the counter is left.

// fencedTokenKey spells out the counter's name from the lock's channel
// name (§1.5): the same decoration, another prefix.
func fencedTokenKey(n lockNames) string {
	return "redisson_lock_token:" + strings.TrimPrefix(n.channel, "redisson_lock__channel:")
}

// runFencedGolden drives the fenced lock with A = client a, owner id 1 and
// B = client b, owner id 1, and checks every step.
func runFencedGolden(t *testing.T, env goldenEnv, n lockNames) {
	ctx := testCtx(t, 2*time.Minute)
	N, ch, TK := n.name, n.channel, fencedTokenKey(n)

	// §1.4: every key of the lock, the counter included, in one slot.
	require.Equal(t, ch, keys.LockChannel(N))
	require.Equal(t, TK, keys.Prefix("redisson_lock_token", N))
	slot := keys.Slot(N)
	require.Equal(t, slot, keys.Slot(TK), "slot of %s", TK)
	latchRE := regexp.MustCompile("^" + regexp.QuoteMeta(n.latchPrefix) + "[0-9a-f]{32}$")

	gate := newGatedDeletes(t, env.rc)
	a := newLockClient(t, gate)
	b := newLockClient(t, gate)
	t.Cleanup(gate.release) // runs before the Clients close
	pub, err := runtime.Of(a).PublishCommand(ctx)
	require.NoError(t, err)
	require.Equal(t, map[bool]string{false: "PUBLISH", true: "SPUBLISH"}[env.sharded], pub)

	ctxA := interlock.WithOwner(ctx, 1)
	ctxB := interlock.WithOwner(ctx, 1)
	A, err := a.Owner(ctxA)
	require.NoError(t, err)
	B, err := b.Owner(ctxB)
	require.NoError(t, err)
	require.Regexp(t, ownerRE, A)
	require.Regexp(t, ownerRE, B)
	mA, mB := fenced.New(a, N), fenced.New(b, N)

	ctl := dial(t, env.node)
	t.Cleanup(func() { ctl.try("DEL", N, TK) })
	if len(env.nodes) > 1 {
		assert.Equal(t, int64(slot), ctl.int("CLUSTER", "KEYSLOT", TK), "CLUSTER KEYSLOT %s", TK)
	}
	r := &recorder{t: t, ctl: ctl, taps: env.taps(t, n), latchRE: latchRE, channel: ch}
	r.mon = openMonitor(t, env.node)
	require.Empty(t, ctl.hash(N))
	require.Zero(t, ctl.int("EXISTS", TK))

	counter := func(want string) {
		t.Helper()
		assert.Equal(t, want, ctl.str("GET", TK), "GET %s", TK)
		assert.Equal(t, int64(-1), ctl.int("PTTL", TK), "the counter must never expire")
	}
	acquire := func(lease, owner string, reentry bool) scriptRun {
		cmds := [][]string{cmd("exists", N)}
		if reentry {
			cmds = append(cmds, cmd("hexists", N, owner))
		}
		cmds = append(cmds, cmd("incr", TK), cmd("hincrby", N, owner, "1"), cmd("pexpire", N, lease))
		return run(script.FencedAcquire(), ks(N, TK), argv(lease, owner), cmds...)
	}
	unlock := func(owner string, final bool) scriptRun {
		cmds := [][]string{cmd("get", anyLatch), cmd("hexists", N, owner), cmd("hincrby", N, owner, "-1")}
		if final {
			cmds = append(cmds, cmd("del", N), cmd(pub, ch, "0"), cmd("set", anyLatch, "1", "px", latchMillis))
		} else {
			cmds = append(cmds, cmd("pexpire", N, watchdogMillis), cmd("set", anyLatch, "0", "px", latchMillis))
		}
		return run(script.Unlock(), ks(N, ch, anyLatch), argv("0", watchdogMillis, owner, pub, latchMillis), cmds...)
	}
	token := func(ctx context.Context, m *fenced.Mutex) uint64 {
		t.Helper()
		tok, err := m.Token(ctx)
		require.NoError(t, err)
		return tok
	}

	// 1. A:1 LockToken (watchdog): token 1.
	tok, err := mA.LockToken(ctxA)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), tok)
	r.step("1 LockToken", false, acquire(watchdogMillis, A, false))
	assert.Equal(t, map[string]string{A: "1"}, ctl.hash(N))
	r.pttlWithin(N, 30*time.Second)
	counter("1")
	guard := mA.Guard(ctxA)
	require.NoError(t, guard.Err())

	// 2. A:1 re-enters with TryLockToken: token 2 (§15.6).
	tok, ok, err := mA.TryLockToken(ctxA, 0, 0)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, uint64(2), tok)
	r.step("2 re-entry", false, acquire(watchdogMillis, A, true))
	assert.Equal(t, map[string]string{A: "2"}, ctl.hash(N))
	counter("2")

	// 3. B:1 is busy: no token. Then the same script directly, for its
	// reply {pttl, -1}; and an RLock of the same name is excluded too.
	tok, ok, err = mB.TryLockToken(ctxB, 0, 0)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Zero(t, tok)
	reply, err := script.FencedAcquire().Exec(ctx, env.rc, []string{N, TK}, []string{watchdogMillis, B}).AsIntSlice()
	require.NoError(t, err)
	require.Len(t, reply, 2)
	assert.True(t, reply[0] > (30*time.Second-ttlSlack).Milliseconds() && reply[0] <= 30000, "busy reply %v, want the holder's PTTL first", reply)
	assert.Equal(t, int64(-1), reply[1], "busy reply %v", reply)
	ok, err = rlock.New(b, N).TryLock(ctxB, 0, 0)
	require.NoError(t, err)
	assert.False(t, ok, "an RLock of the same name acquired a held fenced lock")
	busy := run(script.FencedAcquire(), ks(N, TK), argv(watchdogMillis, B), cmd("exists", N), cmd("hexists", N, B), cmd("pttl", N))
	r.step("3 busy", false, busy, busy, run(script.Acquire(), ks(N), argv(watchdogMillis, B),
		cmd("exists", N), cmd("hexists", N, B), cmd("pttl", N)))
	assert.Equal(t, map[string]string{A: "2"}, ctl.hash(N))
	counter("2")

	// 4. A:1 unlock, partial: RLock's script, latch "0"; the counter stays.
	gate.hold()
	require.NoError(t, mA.Unlock(ctxA))
	latch, _ := r.step("4 partial unlock", false, unlock(A, false))
	require.Regexp(t, latchRE, latch)
	assert.Equal(t, "0", ctl.str("GET", latch))
	assert.Equal(t, map[string]string{A: "1"}, ctl.hash(N))
	counter("2")
	require.NoError(t, guard.Err(), "a partial unlock ended the guard")
	r.latchDeleted(gate, latch)
	r.step("4b latch deleted", false)

	// 5. A:1 unlock, final: DEL, one "0" on the channel, latch "1".
	gate.hold()
	require.NoError(t, mA.Unlock(ctxA))
	latch, _ = r.step("5 final unlock", true, unlock(A, true))
	require.Regexp(t, latchRE, latch)
	assert.Equal(t, "1", ctl.str("GET", latch))
	assert.Zero(t, ctl.int("EXISTS", N))
	counter("2")
	select {
	case <-guard.Done():
		assert.ErrorIs(t, context.Cause(guard), context.Canceled)
	case <-time.After(guardEnds):
		t.Error("the guard was not cancelled by the final unlock")
	}
	r.latchDeleted(gate, latch)
	r.step("5b latch deleted", false)

	// 6. B:1 LockLeaseToken(10s): token 3, and the lease is honoured
	// (Redisson's lockAndGetToken(lease) would send 30000).
	tok, err = mB.LockLeaseToken(ctxB, 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, uint64(3), tok)
	r.step("6 LockLeaseToken", false, acquire(leaseMillis, B, false))
	assert.Equal(t, map[string]string{B: "1"}, ctl.hash(N))
	r.pttlWithin(N, 10*time.Second)
	counter("3")

	// 7. B:1 unlock.
	require.NoError(t, mB.Unlock(ctxB))
	r.step("7 unlock", true, unlock(B, true))
	counter("3")

	// 8. A:1 plain Lock takes a token too; Token reads the counter: 4.
	require.NoError(t, mA.Lock(ctxA))
	assert.Equal(t, uint64(4), token(ctxA, mA))
	_, other := r.step("8 Lock, Token", false, acquire(watchdogMillis, A, false))
	assert.True(t, hasCommand(other, "get", TK), "no GET %s among %v", TK, other)
	require.NoError(t, mA.Unlock(ctxA))
	r.step("8b unlock", true, unlock(A, true))

	// 9. B:1 TryLock with a lease, then Token: 5.
	ok, err = mB.TryLock(ctxB, time.Second, 10*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, uint64(5), token(ctxB, mB))
	r.step("9 TryLock, Token", false, acquire(leaseMillis, B, false))
	counter("5")

	// 10. A:1 is not the owner: ErrNotHeld, nothing changes, no latch.
	require.ErrorIs(t, mA.Unlock(ctxA), interlock.ErrNotHeld)
	r.step("10 unlock by A:1", false, run(script.Unlock(),
		ks(N, ch, anyLatch), argv("0", watchdogMillis, A, pub, latchMillis),
		cmd("get", anyLatch), cmd("hexists", N, A)))
	assert.Equal(t, map[string]string{B: "1"}, ctl.hash(N))
	assert.Empty(t, ctl.scan(n.latchPrefix+"*"))

	// 11. ForceUnlock (by A): RLock's script; the counter is kept.
	forced, err := mA.ForceUnlock(ctxA)
	require.NoError(t, err)
	assert.True(t, forced)
	r.step("11 force unlock", true, run(script.ForceUnlock(), ks(N, ch), argv("0", pub),
		cmd("del", N), cmd(pub, ch, "0")))
	counter("5")

	// 11b. A:1 holds; A:2 (A's Client) waits with LockToken; A:1's unlock
	// passes the lock to A:2 in its own script, and takes A:2's token from
	// the counter there: 7 (A:1's was 6). No DEL, no message.
	tokA, err := mA.LockToken(ctxA)
	require.NoError(t, err)
	assert.Equal(t, uint64(6), tokA)
	r.step("11b A:1 LockToken", false, acquire(watchdogMillis, A, false))
	ctxA2 := interlock.WithOwner(ctx, 2)
	A2, err := a.Owner(ctxA2)
	require.NoError(t, err)
	type tokenResult struct {
		tok uint64
		err error
	}
	got := make(chan tokenResult, 1)
	go func() { tok, err := mA.LockToken(ctxA2); got <- tokenResult{tok, err} }()
	require.Eventually(t, func() bool { return runtime.Of(a).Transfers.Offers() == 1 }, 10*time.Second, time.Millisecond, "A:2 never stood ready")
	busy = run(script.FencedAcquire(), ks(N, TK), argv(watchdogMillis, A2), cmd("exists", N), cmd("hexists", N, A2), cmd("pttl", N))
	r.step("11c A:2 waits", false, busy, busy)
	gate.hold()
	require.NoError(t, mA.Unlock(ctxA))
	res := <-got
	require.NoError(t, res.err)
	assert.Equal(t, uint64(7), res.tok, "the token A:2's LockToken returned")
	latch, _ = r.step("11d transfer", false, run(script.Transfer(),
		ks(N, anyLatch, ch, TK), argv(watchdogMillis, A, latchMillis, A2, watchdogMillis, pub, "0"),
		cmd("get", anyLatch), cmd("hexists", N, A), cmd("hincrby", N, A, "-1"), cmd("hdel", N, A),
		cmd("incr", TK), cmd("hset", N, A2, "1"), cmd("pexpire", N, watchdogMillis), cmd("set", anyLatch, "2:7", "px", latchMillis)))
	assert.Equal(t, map[string]string{A2: "1"}, ctl.hash(N))
	assert.Equal(t, "2:7", ctl.str("GET", latch))
	counter("7")
	replay, err := script.Transfer().Exec(ctx, env.rc, []string{N, latch, ch, TK},
		[]string{watchdogMillis, A, latchMillis, A2, watchdogMillis, pub, "0"}).AsIntSlice()
	require.NoError(t, err)
	assert.Equal(t, []int64{2, 7}, replay)
	r.step("11e replay", false, run(script.Transfer(), ks(N, latch, ch, TK),
		argv(watchdogMillis, A, latchMillis, A2, watchdogMillis, pub, "0"), cmd("get", latch)))
	counter("7")
	r.latchDeleted(gate, latch)
	require.NoError(t, mA.Unlock(ctxA2))
	r.step("11f A:2 unlock", true, unlock(A2, true))

	// 12. Bad input is refused before anything is sent.
	bad := fenced.New(a, "a{"+unique("b"))
	_, err = bad.LockToken(ctxA)
	require.ErrorIs(t, err, interlock.ErrInvalid)
	_, err = mA.LockLeaseToken(ctxA, 0)
	require.ErrorIs(t, err, interlock.ErrInvalid)
	r.step("12 invalid input", false)

	// Nothing is left of the lock but its counter.
	for _, addr := range env.nodes {
		c := ctl
		if addr != env.node {
			c = dial(t, addr)
		}
		var want []string
		if addr == env.node {
			want = []string{TK}
		}
		assert.Equal(t, want, c.scan("*"+n.unique+"*"), "keys left on %s", addr)
	}
	counter("7")
}

// TestGoldenFencedStandalone runs the fenced vector on a standalone
// server, with classic pub/sub: a PSUBSCRIBE tap sees each release, an
// SSUBSCRIBE tap on the same channel sees nothing.
func TestGoldenFencedStandalone(t *testing.T) {
	addr := monitoredStandalone(t)
	rc := redistest.NewClient(t, addr)
	for _, n := range goldenNames() {
		t.Run(n.label, func(t *testing.T) {
			runFencedGolden(t, goldenEnv{
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

// TestGoldenFencedCluster runs the fenced vector on the three-master
// cluster, where releases go out with SPUBLISH on the lock's node (PUBLISH
// on Redis 6): the taps of clusterTaps see them.
func TestGoldenFencedCluster(t *testing.T) {
	cl := monitoredCluster(t)
	rc := cl.Client(t)
	for _, n := range goldenNames() {
		t.Run(n.label, func(t *testing.T) {
			node := cl.NodeForKey(n.name).Addr()
			runFencedGolden(t, goldenEnv{
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

// TestFencedSlotVector checks §15.0's fenced row: the lock and its counter
// share slot 2117, by internal/keys and by the cluster's own CLUSTER
// KEYSLOT.
func TestFencedSlotVector(t *testing.T) {
	parallel(t)
	vectors := map[string]uint16{"myFenced": 2117, "redisson_lock_token:{myFenced}": 2117}
	for k, want := range vectors {
		assert.Equal(t, want, keys.Slot(k), "keys.Slot(%q)", k)
	}
	c := dial(t, sharedCluster(t).Addrs()[0])
	for k, want := range vectors {
		assert.Equal(t, int64(want), c.int("CLUSTER", "KEYSLOT", k), "CLUSTER KEYSLOT %q", k)
	}
}
