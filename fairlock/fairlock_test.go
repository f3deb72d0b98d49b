package fairlock_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/script"
)

func TestReentrancy(t *testing.T) {
	c, rc := newClient(t)
	ctx := redistest.Context(t)
	m := fairlock.New(c, lockName(t))
	other := interlock.WithOwner(ctx, 1<<40)

	count := func() int {
		n, err := m.HoldCount(ctx)
		require.NoError(t, err)
		return n
	}
	excluded := func() bool {
		ok, err := m.TryLock(other, 0, 0)
		require.NoError(t, err)
		return !ok
	}

	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.LockLease(ctx, 10*time.Second))
	assert.Equal(t, 2, count())
	ttl, err := m.TTL(ctx)
	require.NoError(t, err)
	assert.LessOrEqual(t, ttl, 10*time.Second, "a re-entry resets the TTL to its lease")
	assert.True(t, excluded())

	// A queued waiter does not stop the holder re-entering.
	waiter := interlock.WithOwner(ctx, 1<<41)
	done := make(chan error, 1)
	go func() { done <- m.Lock(waiter) }()
	waitQueued(t, rc, m.Name(), 1)
	ok, err := m.TryLock(ctx, 0, 0)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, 3, count())

	require.NoError(t, m.Unlock(ctx))
	require.NoError(t, m.Unlock(ctx))
	assert.Equal(t, 1, count())
	assert.True(t, excluded())
	require.NoError(t, m.Unlock(ctx))
	assert.Equal(t, 0, count())
	require.NoError(t, <-done, "the waiter acquires after the last unlock")
	require.NoError(t, m.Unlock(waiter))
	nothingLeft(t, c, rc, m.Name())
}

// TestSingleAttemptNeverQueues: TryLock with no wait neither queues nor
// takes a free lock whose turn belongs to a queued waiter (Redisson's
// testLockAcquiredBooleanTimeoutDrift_Descrete, in spirit).
func TestSingleAttemptNeverQueues(t *testing.T) {
	c, rc := newClient(t)
	ctx := redistest.Context(t)
	m := fairlock.New(c, lockName(t))
	holder := interlock.WithOwner(ctx, 1)
	require.NoError(t, m.LockLease(holder, 300*time.Millisecond))
	locked := time.Now()

	for id := int64(2); id <= 3; id++ {
		ok, err := m.TryLock(interlock.WithOwner(ctx, id), 0, 0)
		require.NoError(t, err)
		assert.False(t, ok)
	}
	assert.Empty(t, queue(t, rc, m.Name()), "a single attempt queued")

	// Owner 4 queues with a 1s wait, and then, say, dies: its deadline is
	// about 1.3s from now. The holder's lease runs out after 300ms.
	owner4, err := c.Owner(interlock.WithOwner(ctx, 4))
	require.NoError(t, err)
	told := enqueue(t, rc, m.Name(), owner4, time.Now().UnixMilli(), time.Second)
	assert.True(t, told > 0 && told <= 300, "a new waiter is told the holder's PTTL, got %d", told)
	time.Sleep(time.Until(locked.Add(500 * time.Millisecond)))
	ok, err := m.TryLock(interlock.WithOwner(ctx, 5), 0, 0)
	require.NoError(t, err)
	assert.False(t, ok, "took a free lock out of turn")
	// Once that waiter's deadline has passed it is dropped, and anyone may
	// take the lock.
	time.Sleep(time.Until(locked.Add(1500 * time.Millisecond)))
	ok, err = m.TryLock(interlock.WithOwner(ctx, 5), 0, 0)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Empty(t, queue(t, rc, m.Name()))
	require.NoError(t, m.Unlock(interlock.WithOwner(ctx, 5)))
	assert.ErrorIs(t, m.Unlock(holder), interlock.ErrNotHeld)
	nothingLeft(t, c, rc, m.Name())
}

// enqueue queues owner directly with the waiting acquire script, as a
// waiter that then dies would, and returns the script's reply.
func enqueue(t *testing.T, rc rueidis.Client, name, owner string, now int64, wait time.Duration) int64 {
	t.Helper()
	n, err := script.FairAcquire().Exec(context.Background(), rc, []string{name, queueOf(name), timeoutsOf(name)},
		[]string{"30000", owner, strconv.FormatInt(wait.Milliseconds(), 10), strconv.FormatInt(now, 10)}).AsInt64()
	require.NoError(t, err)
	return n
}

// TestFIFOAcrossLeaseExpiry is Redisson's testLeaseTimeout: eight owners,
// started 100ms apart, each TryLock(10s, 1s) and never unlock. Each lease
// runs out by itself, which publishes nothing; the next waiter in line
// takes the lock on its retry timer. They must acquire in the order they
// queued, all within 15s: eight leases, and seven hand-offs on timers a
// loaded machine may fire late (latency, not safety).
func TestFIFOAcrossLeaseExpiry(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 8s")
	}
	const n = 8
	c, rc := newClient(t)
	ctx := redistest.Context(t)
	name := lockName(t)
	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
	)
	start := time.Now()
	for i := range n {
		wg.Go(func() {
			m := fairlock.New(c, name)
			ok, err := m.TryLock(interlock.WithOwner(ctx, int64(100+i)), 20*time.Second, time.Second)
			assert.NoError(t, err)
			if ok {
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
			}
		})
		time.Sleep(100 * time.Millisecond)
	}
	wg.Wait()
	took := time.Since(start)
	t.Logf("%d owners acquired in %v: %v", n, took.Round(time.Millisecond), order)
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7}, order)
	assert.Less(t, took, 15*time.Second)
	assert.Empty(t, queue(t, rc, name))
	assert.Zero(t, c.Stats().Channels)
}

// TestQueueArithmetic is Redisson's testAcquireFailedTimeoutDrift_Descrete
// and testLockAcquiredTimeoutDrift_Descrete with real waiters: a holder
// with a 30s lease, waiters queueing with a 5s wait. Each new waiter is
// told the holder's TTL plus 5s per waiter ahead of it, and its deadline
// is the previous one plus 5s; a waiter that gives up, and the head taking
// the lock, move every deadline behind them 5s earlier.
func TestQueueArithmetic(t *testing.T) {
	const (
		lease = 30 * time.Second
		grace = 5 * time.Second
		// The waiters' latency on a loaded, race-enabled two-core machine:
		// a waiter's deadline counts from its clock when it sent.
		slack = time.Second
	)
	f := &redistest.Hooked{Client: redistest.NewClient(t, addr)}
	c := wrap(t, f)
	rc := f.Client
	ctx := redistest.Context(t)
	name := lockName(t)

	// The first reply of the waiting acquire script to each owner.
	var mu sync.Mutex
	told := map[string]int64{}
	f.Set(func(ctx context.Context, cmd rueidis.Completed, next func() rueidis.RedisResult) rueidis.RedisResult {
		argv, ok := runs(cmd, script.FairAcquire())
		res := next()
		if n, err := res.AsInt64(); ok && err == nil {
			mu.Lock()
			if _, seen := told[argv[1]]; !seen {
				told[argv[1]] = n
			}
			mu.Unlock()
		}
		return res
	})

	m := fairlock.New(c, name, fairlock.WithWaitTimeout(grace))
	holder := interlock.WithOwner(ctx, 1)
	sent := time.Now()
	require.NoError(t, m.LockLease(holder, lease))
	locked := time.Now()

	type waiter struct {
		owner  string
		cancel context.CancelFunc
		done   chan error
	}
	waiters := make([]waiter, 5)
	for i := 1; i <= 4; i++ {
		wctx, cancel := context.WithCancel(interlock.WithOwner(ctx, int64(i+1)))
		owner, err := c.Owner(wctx)
		require.NoError(t, err)
		w := waiter{owner, cancel, make(chan error, 1)}
		waiters[i] = w
		go func() { w.done <- m.Lock(wctx) }()
		waitQueued(t, rc, name, i)
	}
	t.Cleanup(func() {
		for _, w := range waiters[1:] {
			w.cancel()
		}
	})

	q := queue(t, rc, name)
	require.Equal(t, []string{waiters[1].owner, waiters[2].owner, waiters[3].owner, waiters[4].owner}, q)
	d := deadlines(t, rc, name)
	first := d[waiters[1].owner]
	// The lock time lies between the LockLease's send and its reply,
	// however far apart a loaded machine puts them.
	assert.GreaterOrEqual(t, first, sent.Add(lease+grace-slack).UnixMilli(), "first deadline = lock time + lease + wait")
	assert.LessOrEqual(t, first, locked.Add(lease+grace+slack).UnixMilli(), "first deadline = lock time + lease + wait")
	for i := 2; i <= 4; i++ {
		assert.Equal(t, first+int64(i-1)*grace.Milliseconds(), d[waiters[i].owner], "deadline of waiter %d", i)
	}
	mu.Lock()
	for i := 1; i <= 4; i++ {
		wantTold := lease + time.Duration(i-1)*grace
		got := time.Duration(told[waiters[i].owner]) * time.Millisecond
		assert.True(t, got <= wantTold && got > wantTold-slack-time.Since(sent),
			"waiter %d was told %v, want the holder's TTL + %d x %v (about %v)", i, got, i-1, grace, wantTold)
	}
	mu.Unlock()

	// Waiter 2 gives up: 3 and 4 move up by the wait.
	waiters[2].cancel()
	assert.ErrorIs(t, <-waiters[2].done, context.Canceled)
	d = deadlines(t, rc, name)
	assert.Equal(t, []string{waiters[1].owner, waiters[3].owner, waiters[4].owner}, queue(t, rc, name))
	assert.Equal(t, map[string]int64{
		waiters[1].owner: first,
		waiters[3].owner: first + grace.Milliseconds(),
		waiters[4].owner: first + 2*grace.Milliseconds(),
	}, d)

	// The holder releases; waiter 1, at the head, is woken and acquires;
	// 3 and 4 move up again.
	released := time.Now()
	require.NoError(t, m.Unlock(holder))
	require.NoError(t, <-waiters[1].done)
	t.Logf("hand-off to the head: %v", time.Since(released).Round(time.Microsecond))
	// Two seconds for the late wake-ups of a loaded machine (latency).
	assert.Less(t, time.Since(released), 2*time.Second, "woken by its message, not its 30s timer")
	assert.Equal(t, []string{waiters[3].owner, waiters[4].owner}, queue(t, rc, name))
	assert.Equal(t, map[string]int64{
		waiters[3].owner: first,
		waiters[4].owner: first + grace.Milliseconds(),
	}, deadlines(t, rc, name))

	// The rest in order.
	w1 := interlock.WithOwner(ctx, 2)
	require.NoError(t, m.Unlock(w1))
	require.NoError(t, <-waiters[3].done)
	require.NoError(t, m.Unlock(interlock.WithOwner(ctx, 4)))
	require.NoError(t, <-waiters[4].done)
	require.NoError(t, m.Unlock(interlock.WithOwner(ctx, 5)))
	nothingLeft(t, c, rc, name)
}

// TestTimedOutWaiterLeavesQueue is Redisson's testTryLockNonDelayed: a
// waiter whose wait runs out leaves the queue, so it never blocks the
// callers after it.
func TestTimedOutWaiterLeavesQueue(t *testing.T) {
	c, rc := newClient(t)
	ctx := redistest.Context(t)
	m := fairlock.New(c, lockName(t))
	a, b := interlock.WithOwner(ctx, 1), interlock.WithOwner(ctx, 2)

	ok, err := m.TryLock(a, 0, 0)
	require.NoError(t, err)
	require.True(t, ok)
	var wg sync.WaitGroup
	wg.Go(func() {
		time.Sleep(200 * time.Millisecond)
		start := time.Now()
		ok, err := m.TryLock(b, 200*time.Millisecond, 0)
		assert.NoError(t, err)
		assert.False(t, ok)
		took := time.Since(start)
		assert.GreaterOrEqual(t, took, 200*time.Millisecond)
		// The wait, and a second for the late timers of a loaded
		// machine (latency, not safety).
		assert.Less(t, took, 200*time.Millisecond+time.Second)
		assert.Empty(t, queue(t, rc, m.Name()), "the timed-out waiter is still queued")
	})
	// The waiter's TryLock ends before the lock is free, however late a
	// loaded machine runs it.
	wg.Wait()
	require.NoError(t, m.Unlock(a))
	wg.Wait()

	ok, err = m.TryLock(ctx, 0, 0)
	require.NoError(t, err)
	assert.True(t, ok, "a ghost waiter blocks the lock")
	require.NoError(t, m.Unlock(ctx))
	nothingLeft(t, c, rc, m.Name())
}

// TestTryLockWaitHonoured: a lock held by a client that went away is
// waited for exactly as long as asked.
func TestTryLockWaitHonoured(t *testing.T) {
	c, rc := newClient(t)
	ctx := redistest.Context(t)
	name := lockName(t)
	gone, _ := newClient(t)
	require.NoError(t, fairlock.New(gone, name).LockLease(ctx, 30*time.Second))
	require.NoError(t, gone.Close())

	m := fairlock.New(c, name)
	start := time.Now()
	ok, err := m.TryLock(ctx, time.Second, 0)
	took := time.Since(start)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.GreaterOrEqual(t, took, 990*time.Millisecond)
	// A second for the late timers of a loaded machine (latency).
	assert.Less(t, took, 2*time.Second)
	assert.Empty(t, queue(t, rc, name))
	rc.Do(ctx, rc.B().Del().Key(name).Build())
}

// TestCancelledWaiterLeavesQueueAndPassesTurn: waiters whose context ends
// leave the queue. When the one that leaves was the head and the lock is
// free (here: the holder's key vanished silently, so nobody was told), the
// next waiter is woken at once instead of sleeping out its 30s timer.
func TestCancelledWaiterLeavesQueueAndPassesTurn(t *testing.T) {
	c, rc := newClient(t)
	ctx := redistest.Context(t)
	m := fairlock.New(c, lockName(t))
	holder := interlock.WithOwner(ctx, 1)
	require.NoError(t, m.Lock(holder))

	actx, cancelA := context.WithCancel(interlock.WithOwner(ctx, 2))
	defer cancelA()
	aDone := make(chan error, 1)
	go func() { aDone <- m.Lock(actx) }()
	waitQueued(t, rc, m.Name(), 1)
	bctx, cancelB := context.WithTimeout(interlock.WithOwner(ctx, 3), 20*time.Second)
	defer cancelB()
	bDone := make(chan error, 1)
	go func() { bDone <- m.Lock(bctx) }()
	waitQueued(t, rc, m.Name(), 2)
	// A third waiter gives up through its deadline.
	dctx, cancelD := context.WithTimeout(interlock.WithOwner(ctx, 4), 300*time.Millisecond)
	defer cancelD()
	assert.ErrorIs(t, m.Lock(dctx), context.DeadlineExceeded)
	assert.Len(t, queue(t, rc, m.Name()), 2, "the timed-out waiter is still queued")

	// The holder's hold vanishes without a message; both waiters sleep on
	// a timer of about 30s.
	require.NoError(t, rc.Do(ctx, rc.B().Del().Key(m.Name()).Build()).Error())
	time.Sleep(100 * time.Millisecond)
	cancelA()
	left := time.Now()
	assert.ErrorIs(t, <-aDone, context.Canceled)
	select {
	case err := <-bDone:
		require.NoError(t, err)
		t.Logf("next waiter acquired %v after the head left", time.Since(left).Round(time.Microsecond))
		assert.Less(t, time.Since(left), 2*time.Second)
	case <-time.After(10 * time.Second):
		t.Fatal("the next waiter was not woken when the head left")
	}
	require.NoError(t, m.Unlock(interlock.WithOwner(ctx, 3)))
	nothingLeft(t, c, rc, m.Name())
}

// TestDeadWaiterIsPurged: a waiter that died while queued (it never left)
// keeps its turn until its deadline, then the next attempt drops it and
// the waiter behind it acquires (Redisson's testAbandonedTimeoutDrift).
// Meanwhile the live waiter checks again at growing intervals, at most a
// second apart.
func TestDeadWaiterIsPurged(t *testing.T) {
	c, rc := newClient(t)
	ctx := redistest.Context(t)
	m := fairlock.New(c, lockName(t))
	holder := interlock.WithOwner(ctx, 1)
	require.NoError(t, m.LockLease(holder, 500*time.Millisecond))

	dead, err := c.Owner(interlock.WithOwner(ctx, 99))
	require.NoError(t, err)
	enqueue(t, rc, m.Name(), dead, time.Now().UnixMilli(), 10*time.Second)
	live := interlock.WithOwner(ctx, 2)
	done := make(chan time.Time, 1)
	go func() {
		assert.NoError(t, m.Lock(live))
		done <- time.Now()
	}()
	waitQueued(t, rc, m.Name(), 2)

	// The holder's lease runs out; the dead head's deadline (about 10.5s
	// after it queued) is still ahead, so it keeps the free lock from the
	// live waiter.
	select {
	case <-done:
		t.Fatal("the live waiter overtook a waiter that was not yet stale")
	case <-time.After(1500 * time.Millisecond):
	}
	locked, err := m.IsLocked(ctx)
	require.NoError(t, err)
	require.False(t, locked)
	// Bring the dead waiter's deadline forward rather than wait 9s more.
	due := time.Now().Add(200 * time.Millisecond)
	require.NoError(t, rc.Do(ctx, rc.B().Zadd().Key(timeoutsOf(m.Name())).ScoreMember().ScoreMember(float64(due.UnixMilli()), dead).Build()).Error())
	select {
	case at := <-done:
		late := at.Sub(due)
		t.Logf("live waiter acquired %v after the dead one's deadline", late.Round(time.Millisecond))
		assert.Greater(t, late, time.Duration(0))
		assert.Less(t, late, 2*time.Second, "polls at most a second apart while a dead head blocks")
	case <-time.After(10 * time.Second):
		t.Fatal("the live waiter never acquired")
	}
	assert.Empty(t, queue(t, rc, m.Name()))
	assert.Empty(t, deadlines(t, rc, m.Name()))
	require.NoError(t, m.Unlock(live))
	assert.ErrorIs(t, m.Unlock(holder), interlock.ErrNotHeld)
	nothingLeft(t, c, rc, m.Name())
}

// TestUnlockExpiredLock: Redisson reports success when a fair lock that
// already expired is unlocked (testExpire); interlock reports ErrNotHeld,
// and the guard has the loss. The waiter that took over is unaffected.
func TestUnlockExpiredLock(t *testing.T) {
	c, rc := newClient(t)
	ctx := redistest.Context(t)
	m := fairlock.New(c, lockName(t))
	a := interlock.WithOwner(ctx, 1)
	require.NoError(t, m.LockLease(a, 300*time.Millisecond))
	guard := m.Guard(a)

	b := interlock.WithOwner(ctx, 2)
	start := time.Now()
	require.NoError(t, m.Lock(b))
	took := time.Since(start)
	assert.Greater(t, took, 200*time.Millisecond)
	// The lease, and a second for the late timers of a loaded machine
	// (latency, not safety).
	assert.Less(t, took, 300*time.Millisecond+time.Second)
	require.NoError(t, m.Unlock(b))

	<-guard.Done()
	assert.ErrorIs(t, context.Cause(guard), interlock.ErrLockLost)
	assert.ErrorIs(t, m.Unlock(a), interlock.ErrNotHeld)
	// Also for an owner that never held it.
	assert.ErrorIs(t, m.Unlock(interlock.WithOwner(ctx, 3)), interlock.ErrNotHeld)
	nothingLeft(t, c, rc, m.Name())
}

// TestBadWaitTimeoutSendsNothing: a bad WithWaitTimeout makes every method
// fail with ErrInvalid before anything is sent (the rest of bad input is
// in the conformance suite).
func TestBadWaitTimeoutSendsNothing(t *testing.T) {
	counting := &redistest.Hooked{Client: redistest.NewClient(t, addr)}
	c := wrap(t, counting)
	ctx := redistest.Context(t)

	for _, d := range []time.Duration{0, -time.Second, time.Microsecond} {
		bad := fairlock.New(c, "fine", fairlock.WithWaitTimeout(d))
		err := bad.Lock(ctx)
		assert.ErrorIs(t, err, interlock.ErrInvalid, "WithWaitTimeout(%v)", d)
		assert.ErrorContains(t, err, "fairlock: acquire fine: interlock: invalid argument: wait timeout")
		assert.ErrorIs(t, bad.Unlock(ctx), interlock.ErrInvalid)
	}
	assert.Zero(t, counting.Sent(), "commands sent for bad input")
}

func TestWatchdogKeepsTheLockNotTheQueue(t *testing.T) {
	// Renewals every 500ms, each with a second to spare for a loaded
	// machine.
	const watchdog = 1500 * time.Millisecond
	c, rc := newClient(t, interlock.WithWatchdogTimeout(watchdog))
	ctx := redistest.Context(t)
	m := fairlock.New(c, lockName(t))
	require.NoError(t, m.Lock(ctx))
	guard := m.Guard(ctx)
	waiter := interlock.WithOwner(ctx, 1<<40)
	done := make(chan error, 1)
	go func() { done <- m.Lock(waiter) }()
	waitQueued(t, rc, m.Name(), 1)

	end := time.Now().Add(4 * watchdog / 3) // past the lease
	for time.Now().Before(end) {
		pttl, err := rc.Do(ctx, rc.B().Pttl().Key(m.Name()).Build()).AsInt64()
		require.NoError(t, err)
		require.Greater(t, pttl, int64(0), "the lock expired while held")
		require.LessOrEqual(t, pttl, watchdog.Milliseconds())
		for _, k := range []string{queueOf(m.Name()), timeoutsOf(m.Name())} {
			pttl, err := rc.Do(ctx, rc.B().Pttl().Key(k).Build()).AsInt64()
			require.NoError(t, err)
			require.Equal(t, int64(-1), pttl, "%s got a TTL", k)
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.NoError(t, guard.Err())
	require.NoError(t, m.Unlock(ctx))
	require.NoError(t, <-done)
	require.NoError(t, m.Unlock(waiter))
	nothingLeft(t, c, rc, m.Name())
}
