package reliability

// T33 and T34 (docs/reliability.md): faults inside a multilock gathering.
// T33 loses the reply to the second member's acquire script (and, in one
// variant, to the lease's renew once the members are gathered); T34
// freezes a master between its member's acquisition and the lease.

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/fenced"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/script"
	"github.com/interlock-go/interlock/multilock"
	"github.com/interlock-go/interlock/rlock"
	"github.com/interlock-go/interlock/rwlock"
)

// mlOnKey is a proxy predicate matching runs of any of scripts that name
// key among their arguments, so that one member's traffic is singled out
// among members of one kind.
func mlOnKey(key string, scripts ...*script.Script) func(cmd []string) bool {
	match := netScripts(scripts...)
	return func(cmd []string) bool { return match(cmd) && len(cmd) > 3 && slices.Contains(cmd[3:], key) }
}

// mlVariant is how T33 calls the MultiLock whose second member's acquire
// reply is lost.
type mlVariant struct {
	name string
	drop int // replies to drop: 1, or -1 for every one during the call
	call func(ctx context.Context, m *multilock.Mutex) (bool, error)
	// acquires: the call is expected to acquire (a wait lets it gather
	// again once the lost attempt was taken back).
	acquires bool
}

var mlVariants = []mlVariant{
	{"one-attempt", 1, func(ctx context.Context, m *multilock.Mutex) (bool, error) { return m.TryLock(ctx, 0, 0) }, false},
	{"one-attempt-leased", 1, func(ctx context.Context, m *multilock.Mutex) (bool, error) {
		return m.TryLock(ctx, 0, 2*time.Second)
	}, false},
	{"every-reply-lost", -1, func(ctx context.Context, m *multilock.Mutex) (bool, error) {
		return m.TryLock(ctx, 100*time.Millisecond, 0)
	}, false},
	{"lock", 1, func(ctx context.Context, m *multilock.Mutex) (bool, error) { return true, m.Lock(ctx) }, true},
}

// TestT33MultiLockLostAcquireReply is T33: a MultiLock of an rlock and a
// member of each kind, on one Client behind the proxy, whose second
// member's acquire reply is lost (the script ran; the connection ends).
// A call that cannot gather again (one attempt, or every reply lost for
// its wait) returns false with an error; once the Client's clean-up has
// settled, no member is held on the server and nothing is recorded, and
// another owner on another Client acquires both members at once. A Lock,
// which gathers again, ends with each member held exactly once (never
// twice), and its Unlock leaves nothing. A last variant loses the reply
// to the lease's renew after the first member was lost (a re-entered
// middle member keeps its outer hold).
func TestT33MultiLockLostAcquireReply(t *testing.T) {
	iters := sized(10, 100) // per variant and kind
	for _, k := range netKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			e := netStart(t, interlock.WithWatchdogTimeout(2*time.Second))
			other, err := interlock.New(e.direct, interlock.WithWatchdogTimeout(2*time.Second))
			require.NoError(t, err)
			t.Cleanup(func() { _ = other.Close() })
			var (
				failed, acquired, wrong, notDropped, late int
				unsent                                    int // every-reply-lost calls whose wait ended before the send
				settle, later                             []time.Duration
				errs                                      netErrTally
			)
			for i := range iters * len(mlVariants) {
				v := mlVariants[i%len(mlVariants)]
				first := fmt.Sprintf("t33:%s:%d:a", k.name, i)
				second := fmt.Sprintf("t33:%s:%d:b", k.name, i)
				open := func(c *interlock.Client) *multilock.Mutex {
					return multilock.New(rlock.New(c, first), mlLocker(k, c, second))
				}
				octx, field := netOwner(t, e.c, k)
				ctx, cancel := context.WithTimeout(octx, 20*time.Second)
				dropped := e.proxy.Stats().RepliesDropped
				e.proxy.DropReplyTo(mlOnKey(second, k.acquire...), v.drop)
				m := open(e.c)
				ok, err := v.call(ctx, m)
				e.proxy.DropReplyTo(nil, 0)
				// Under load a short wait may run out before the second
				// member's acquisition is sent: then nothing was lost and
				// (false, nil), busy, is the right answer.
				unsentCall := false
				if e.proxy.Stats().RepliesDropped == dropped {
					if unsentCall = v.drop < 0 && !ok && err == nil; unsentCall {
						unsent++
					} else {
						notDropped++
					}
				}
				if err != nil {
					errs.add(err)
				}
				if v.acquires {
					if !ok || err != nil {
						wrong++
						t.Errorf("%d %s: Lock = %v; want it to gather again", i, v.name, err)
					} else {
						acquired++
						ownerField, _ := e.c.Owner(octx)
						if a, b := netCount(t, e.direct, first, ownerField), netCount(t, e.direct, second, field); a != 1 || b != 1 {
							wrong++
							t.Errorf("%d %s: counts %d and %d after the Lock, want 1 and 1", i, v.name, a, b)
						}
						require.NoError(t, m.Unlock(ctx), "%d %s", i, v.name)
					}
				} else if (ok || err == nil) && !unsentCall {
					wrong++
					t.Errorf("%d %s: TryLock = %v, %v; want false and the lost reply's error", i, v.name, ok, err)
					if ok {
						require.NoError(t, m.Unlock(ctx))
					}
				} else if !unsentCall {
					failed++
				}
				// Settled: nothing recorded, nothing pending, no key.
				began := time.Now()
				for e.c.Stats().UndoQueue != 0 && time.Since(began) < 10*time.Second {
					time.Sleep(time.Millisecond)
				}
				settle = append(settle, time.Since(began))
				if s := e.c.Stats(); s.Holds != 0 || s.UndoQueue != 0 {
					wrong++
					t.Errorf("%d %s: after the call: %+v", i, v.name, s)
				}
				if left := netKeysLeft(t, e.direct); len(left) > 0 {
					if t33Late(ctx, t, e, left, first, second) {
						late++
					} else {
						wrong++
						t.Errorf("%d %s: keys left:\n%s", i, v.name, netDump(e.direct, left))
						require.NoError(t, e.direct.Do(ctx, e.direct.B().Del().Key(left...).Build()).Error())
					}
				}
				// Another owner, through another Client, at once.
				om := open(other)
				octx2 := interlock.WithOwner(ctx, interlock.NewOwnerID())
				began = time.Now()
				ok, err = om.TryLock(octx2, 0, 0)
				later = append(later, time.Since(began))
				if !ok || err != nil {
					wrong++
					t.Errorf("%d %s: another owner's TryLock(0, 0) = %v, %v", i, v.name, ok, err)
				} else {
					require.NoError(t, om.Unlock(octx2))
				}
				cancel()
				if t.Failed() && i > 8 {
					break
				}
			}
			t.Run("lost-relet-reply", func(t *testing.T) { t33LostRelet(t, e, k) })
			t.Logf("T33 %s: %d calls (%d per variant), %d failed cleanly, %d Locks gathered again with counts 1 and 1, %d wrong, %d not dropped, %d unsent, %d members acquired after their undo (expired by themselves); clean-up settled in %s; another owner's TryLock %s; errors: %v",
				k.name, iters*len(mlVariants), iters, failed, acquired, wrong, notDropped, unsent, late, procDurations(settle), procDurations(later), &errs)
			assert.Zero(t, notDropped, "calls in which the proxy dropped no acquire reply")
			assert.Less(t, unsent, iters, "every every-reply-lost call ended its wait before it sent the lost acquisition")
		})
	}
}

// t33Late reports whether the keys left after a settled clean-up are an
// acquisition the server ran after its undo (docs/reliability.md, "an
// acquisition cut short in flight can outlive its undo"): only the call's
// own members, each with a TTL within the watchdog timeout, which nothing
// renews, so that each is gone by itself within it.
func t33Late(ctx context.Context, t *testing.T, e *netEnv, left []string, first, second string) bool {
	t.Helper()
	var until time.Time
	for _, k := range left {
		pttl, err := netPTTL(ctx, e.direct, k)
		if (k != first && k != second) || err != nil || pttl <= 0 || pttl > 2000 {
			return false
		}
		if end := time.Now().Add(time.Duration(pttl) * time.Millisecond); end.After(until) {
			until = end
		}
	}
	t.Logf("members acquired after their undo:\n%s", netDump(e.direct, left))
	for time.Now().Before(until.Add(500 * time.Millisecond)) {
		n, err := e.direct.Do(ctx, e.direct.B().Exists().Key(left...).Build()).AsInt64()
		if err == nil && n == 0 {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// mlLocker returns the lock of kind k called name on c.
func mlLocker(k netKind, c *interlock.Client, name string) interlock.Locker {
	switch k.name {
	case "rlock":
		return rlock.New(c, name)
	case "fairlock":
		return fairlock.New(c, name, fairlock.WithWaitTimeout(2*time.Second))
	case "rwread":
		return rwlock.New(c, name).Read()
	case "rwwrite":
		return rwlock.New(c, name).Write()
	case "fenced":
		return fenced.New(c, name)
	}
	panic("reliability: no kind " + k.name)
}

// t33LostRelet: a MultiLock of three members whose last member's
// acquire reply is held back while the first member's key is deleted (the
// first is lost before the lease is given), and whose last member's renew
// reply is then lost: the call fails, the middle member, which the owner
// held before, keeps exactly its outer hold, and nothing else is left.
func t33LostRelet(t *testing.T, e *netEnv, k netKind) {
	n := []string{"t33:relet:" + k.name + ":a", "t33:relet:" + k.name + ":b", "t33:relet:" + k.name + ":c"}
	octx, _ := netOwner(t, e.c, k)
	ctx, cancel := context.WithTimeout(octx, 20*time.Second)
	defer cancel()
	middle := rlock.New(e.c, n[1])
	require.NoError(t, middle.Lock(ctx))
	require.NoError(t, e.proxy.DelayReplyTo(mlOnKey(n[2], k.acquire...), 200*time.Millisecond, 0))
	e.proxy.DropReplyTo(mlOnKey(n[2], script.Renew(), script.RWRenewRead()), -1)
	defer func() {
		_ = e.proxy.DelayReplyTo(nil, 0, 0)
		e.proxy.DropReplyTo(nil, 0)
	}()
	deleted := make(chan struct{})
	go func() {
		defer close(deleted)
		for ctx.Err() == nil {
			if x, _ := e.direct.Do(ctx, e.direct.B().Exists().Key(n[2]).Build()).AsInt64(); x == 1 {
				_ = e.direct.Do(ctx, e.direct.B().Del().Key(n[0]).Build()).Error()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	m := multilock.New(rlock.New(e.c, n[0]), middle, mlLocker(k, e.c, n[2]))
	// The renew is resent until the call's context ends, which must come
	// after the gathering (the held-back reply) and fails the lease.
	tctx, tcancel := context.WithTimeout(ctx, 700*time.Millisecond)
	ok, err := m.TryLock(tctx, 400*time.Millisecond, 5*time.Second)
	tcancel()
	<-deleted
	assert.False(t, ok, "the first member was lost and the last one's lease failed")
	assert.Error(t, err)
	count, cerr := middle.HoldCount(ctx)
	require.NoError(t, cerr)
	assert.Equal(t, 1, count, "the middle member keeps the outer hold")
	require.NoError(t, middle.Unlock(ctx))
	waitUndo(e.c, 10*time.Second)
	if left := netKeysLeft(t, e.direct); len(left) > 0 {
		t.Errorf("keys left:\n%s", netDump(e.direct, left))
	}
	assert.Zero(t, e.c.Stats().Holds)
	t.Logf("T33 %s lost relet reply: TryLock = %v, %v", k.name, ok, err)
}

// waitUndo waits until c has no clean-up pending, for up to within.
func waitUndo(c *interlock.Client, within time.Duration) {
	deadline := time.Now().Add(within)
	for c.Stats().UndoQueue != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
}

// TestT34RedLockMasterFrozenBeforeTheLease is T34: a master freezes after
// its member was acquired and before the gathering gives the members
// their lease (the proxy holds back the last member's acquire reply for
// 200 ms, and the first master is paused as soon as that script has run).
// TryLock(wait 1 s, lease 3 s) must still return within its wait plus the
// give-back bound (multilock's undoTimeout, 5 s) and a second, however
// long the caller's context; once the master is back and the clean-up
// settled, nothing is held anywhere.
func TestT34RedLockMasterFrozenBeforeTheLease(t *testing.T) {
	redistest.RequireProcess(t)
	const (
		wait  = time.Second
		lease = 3 * time.Second
		bound = wait + 5*time.Second + time.Second
	)
	runs := sized(1, 10)
	a, b := redistest.Standalone(t), redistest.Standalone(t)
	t.Cleanup(func() { _ = a.Resume() })
	ca, err := interlock.New(a.Client(t), interlock.WithWatchdogTimeout(2*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { _ = ca.Close() })
	cb, err := interlock.New(b.Client(t), interlock.WithWatchdogTimeout(2*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cb.Close() })
	e := netStart(t, interlock.WithWatchdogTimeout(2*time.Second))
	directA, directB := a.Client(t), b.Client(t)
	var took []time.Duration
	for run := range runs {
		name := fmt.Sprintf("t34:%d", run)
		require.NoError(t, e.proxy.DelayReplyTo(mlOnKey(name, script.Acquire()), 200*time.Millisecond, 0))
		m := multilock.NewRedLock(rlock.New(ca, name), rlock.New(cb, name), rlock.New(e.c, name))
		paused := make(chan error, 1)
		go func() {
			for {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				n, err := e.direct.Do(ctx, e.direct.B().Exists().Key(name).Build()).AsInt64()
				cancel()
				if err != nil || n == 1 {
					if err == nil {
						err = a.Pause()
					}
					paused <- err
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
		octx := interlock.WithOwner(context.Background(), interlock.NewOwnerID())
		// A caller's context far longer than the wait.
		ctx, cancel := context.WithTimeout(octx, bound+5*time.Second)
		began := time.Now()
		ok, err := m.TryLock(ctx, wait, lease)
		d := time.Since(began)
		took = append(took, d)
		require.NoError(t, <-paused)
		assert.LessOrEqual(t, d, bound, "run %d: TryLock(wait %v, lease %v) with a master frozen before the lease returned %v, %v", run, wait, lease, ok, err)
		require.NoError(t, e.proxy.DelayReplyTo(nil, 0, 0))
		if ok {
			// The frozen member's unlock may fail; the others' may not.
			uctx, ucancel := context.WithTimeout(octx, time.Second)
			err := m.Unlock(uctx)
			ucancel()
			for _, c := range []*interlock.Client{cb, e.c} {
				assert.Zero(t, c.Stats().Holds, "run %d: held after Unlock (%v)", run, err)
			}
		}
		require.NoError(t, a.Resume())
		cancel()
		for _, c := range []*interlock.Client{ca, cb, e.c} {
			waitUndo(c, 10*time.Second)
		}
		deadline := time.Now().Add(lease + 2*time.Second)
		for _, rc := range []struct {
			name string
			left func() []string
		}{
			{"a", func() []string { return netKeysLeft(t, directA) }},
			{"b", func() []string { return netKeysLeft(t, directB) }},
			{"c", func() []string { return netKeysLeft(t, e.direct) }},
		} {
			for len(rc.left()) > 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			assert.Empty(t, rc.left(), "run %d: server %s", run, rc.name)
		}
		t.Logf("T34 run %d: TryLock = %v, %v after %v", run, ok, err, d.Round(time.Millisecond))
	}
	t.Logf("T34: %d runs, TryLock %s (bound %v)", runs, procDurations(took), bound)
}
