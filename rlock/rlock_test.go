package rlock_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/rlock"
)

func TestLockUnlockLeavesNothing(t *testing.T) {
	c, rc := newClient(t)
	ctx := testCtx(t)
	m := rlock.New(c, lockName(t))

	require.NoError(t, m.Lock(ctx))
	locked, err := m.IsLocked(ctx)
	require.NoError(t, err)
	assert.True(t, locked)
	held, err := m.IsHeld(ctx)
	require.NoError(t, err)
	assert.True(t, held)
	ttl, err := m.TTL(ctx)
	require.NoError(t, err)
	assert.InDelta(t, float64(interlock.DefaultWatchdogTimeout), float64(ttl), float64(2*time.Second))
	owner, err := c.Owner(ctx)
	require.NoError(t, err)
	fields, err := rc.Do(ctx, rc.B().Hgetall().Key(m.Name()).Build()).AsStrMap()
	require.NoError(t, err)
	assert.Equal(t, map[string]string{owner: "1"}, fields)

	require.NoError(t, m.Unlock(ctx))
	locked, err = m.IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked)
	// The latch is deleted in the background, right after the unlock.
	eventually(t, 2*time.Second, func() bool {
		keys, err := rc.Do(ctx, rc.B().Keys().Pattern("*"+m.Name()+"*").Build()).AsStrSlice()
		return err == nil && len(keys) == 0
	}, "keys left behind after unlock")
	assert.Zero(t, c.Stats().Holds)
	assert.ErrorIs(t, m.Unlock(ctx), rlock.ErrNotHeld)
}

func TestReentrancy(t *testing.T) {
	c, _ := newClient(t)
	ctx := testCtx(t)
	m := rlock.New(c, lockName(t))
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
	assert.Equal(t, 1, count())
	require.NoError(t, m.Lock(ctx))
	assert.Equal(t, 2, count())
	assert.True(t, excluded())
	require.NoError(t, m.Unlock(ctx))
	assert.Equal(t, 1, count())
	assert.True(t, excluded())
	require.NoError(t, m.Unlock(ctx))
	assert.Equal(t, 0, count())
	assert.False(t, excluded(), "another owner acquires after the last unlock")
	require.NoError(t, m.Unlock(other))
}

func TestGoroutineIsTheDefaultOwner(t *testing.T) {
	c, _ := newClient(t)
	ctx := testCtx(t)
	m := rlock.New(c, lockName(t))
	require.NoError(t, m.Lock(ctx))

	var wg sync.WaitGroup
	wg.Go(func() {
		ok, err := m.TryLock(ctx, 0, 0)
		assert.NoError(t, err)
		assert.False(t, ok, "another goroutine is another owner")
		assert.ErrorIs(t, m.Unlock(ctx), rlock.ErrNotHeld)
	})
	wg.Wait()
	require.NoError(t, m.Unlock(ctx))
}

func TestExplicitOwnerCrossesGoroutines(t *testing.T) {
	c, _ := newClient(t)
	ctx := interlock.WithOwner(testCtx(t), 7)
	m := rlock.New(c, lockName(t))
	require.NoError(t, m.Lock(ctx))

	var wg sync.WaitGroup
	wg.Go(func() {
		assert.ErrorIs(t, m.Unlock(context.Background()), rlock.ErrNotHeld, "a goroutine without the owner")
		assert.NoError(t, m.Unlock(ctx), "a goroutine carrying the owner")
	})
	wg.Wait()
	locked, err := m.IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked)
}

func TestWatchdogKeepsTheLock(t *testing.T) {
	if testing.Short() {
		t.Skip("holds a lock for 5s")
	}
	c, rc := newClient(t, interlock.WithWatchdogTimeout(time.Second))
	ctx := testCtx(t)
	m := rlock.New(c, lockName(t))
	require.NoError(t, m.Lock(ctx))
	guard := m.Guard(ctx)

	end := time.Now().Add(5 * time.Second)
	for time.Now().Before(end) {
		pttl, err := rc.Do(ctx, rc.B().Pttl().Key(m.Name()).Build()).AsInt64()
		require.NoError(t, err)
		require.Greater(t, pttl, int64(0), "the lock expired while held")
		require.LessOrEqual(t, pttl, int64(1000))
		time.Sleep(50 * time.Millisecond)
	}
	require.NoError(t, guard.Err())
	require.NoError(t, m.Unlock(ctx))
	<-guard.Done()
	assert.ErrorIs(t, context.Cause(guard), context.Canceled, "a release is not a loss")
	n, err := rc.Do(ctx, rc.B().Exists().Key(m.Name()).Build()).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, n)
}

func TestGuardReportsDeletedKey(t *testing.T) {
	// Renewed every 667ms; the hold, just taken, would run out unrenewed
	// only 2s after its key was deleted.
	const watchdog = 2 * time.Second
	c, rc := newClient(t, interlock.WithWatchdogTimeout(watchdog))
	ctx := testCtx(t)
	m := rlock.New(c, lockName(t))
	require.NoError(t, m.Lock(ctx))
	guard := m.Guard(ctx)

	require.NoError(t, rc.Do(ctx, rc.B().Del().Key(m.Name()).Build()).Error())
	deleted := time.Now()
	select {
	case <-guard.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("guard not cancelled")
	}
	took := time.Since(deleted)
	assert.ErrorIs(t, context.Cause(guard), rlock.ErrLockLost)
	// Found by the next renewal, one interval at most, plus a second for
	// the late wake-ups of a loaded machine (latency, not safety): still
	// before the validity would have run out.
	assert.Less(t, took, watchdog/3+time.Second)
	t.Logf("loss reported %v after the key was deleted", took.Round(time.Millisecond))
	assert.ErrorIs(t, m.Unlock(ctx), rlock.ErrNotHeld)
}

func TestGuardOfLeaseHold(t *testing.T) {
	c, _ := newClient(t)
	ctx := testCtx(t)
	m := rlock.New(c, lockName(t))
	const lease = 300 * time.Millisecond
	require.NoError(t, m.LockLease(ctx, lease))
	start := time.Now()
	guard := m.Guard(ctx)
	<-guard.Done()
	assert.ErrorIs(t, context.Cause(guard), rlock.ErrLockLost)
	// At the lease, give or take a second for the late timers of a loaded
	// machine (latency, not safety).
	assert.Less(t, time.Since(start), lease+time.Second)

	// The guard fires a little before the server expires the key: its clock
	// starts when the acquire was sent.
	eventually(t, 2*time.Second, func() bool {
		locked, err := m.IsLocked(ctx)
		return err == nil && !locked
	}, "the lease did not end on the server")
	again := m.Guard(ctx)
	assert.ErrorIs(t, context.Cause(again), rlock.ErrLockLost, "the lease ran out before any unlock")
	assert.ErrorIs(t, m.Unlock(ctx), rlock.ErrNotHeld)
	assert.ErrorIs(t, context.Cause(m.Guard(ctx)), rlock.ErrNotHeld)
}

func TestTryLockWaitsForRelease(t *testing.T) {
	c, _ := newClient(t)
	ctx := testCtx(t)
	m := rlock.New(c, lockName(t))
	holder := interlock.WithOwner(ctx, 1)
	require.NoError(t, m.Lock(holder))

	ok, err := m.TryLock(ctx, 100*time.Millisecond, 0)
	require.NoError(t, err)
	assert.False(t, ok, "busy for the whole wait")

	go func() {
		time.Sleep(100 * time.Millisecond)
		assert.NoError(t, m.Unlock(holder))
	}()
	start := time.Now()
	ok, err = m.TryLock(ctx, 5*time.Second, time.Second)
	require.NoError(t, err)
	assert.True(t, ok)
	// Well short of the 5s wait; the rest is for the late wake-ups of a
	// loaded machine (latency, not safety).
	assert.Less(t, time.Since(start), 3*time.Second, "woken by the release message, not by the 30s TTL")
	ttl, err := m.TTL(ctx)
	require.NoError(t, err)
	assert.LessOrEqual(t, ttl, time.Second)
	require.NoError(t, m.Unlock(ctx))
}

func TestReleaseMessageLostFallsBackToTTL(t *testing.T) {
	ctx := testCtx(t)
	waiters, _ := newClient(t)
	// The holder publishes with SPUBLISH, which a classic SUBSCRIBE never
	// receives: its release message is lost to the waiter.
	holders, _ := newClient(t, interlock.WithPubSubMode(interlock.PubSubSharded))
	name := lockName(t)
	holder := interlock.WithOwner(ctx, 1)
	require.NoError(t, rlock.New(holders, name).LockLease(holder, 1500*time.Millisecond))

	start := time.Now()
	go func() {
		time.Sleep(200 * time.Millisecond)
		assert.NoError(t, rlock.New(holders, name).Unlock(holder))
	}()
	m := rlock.New(waiters, name)
	require.NoError(t, m.Lock(ctx))
	took := time.Since(start)
	t.Logf("acquired after %v", took.Round(time.Millisecond))
	assert.Greater(t, took, time.Second, "no message: the waiter slept for the PTTL")
	assert.Less(t, took, 3*time.Second)
	require.NoError(t, m.Unlock(ctx))
}

func TestCancelWhileWaitingLeavesNothing(t *testing.T) {
	c, rc := newClient(t)
	ctx := testCtx(t)
	m := rlock.New(c, lockName(t))
	holder := interlock.WithOwner(ctx, 1)
	require.NoError(t, m.Lock(holder))

	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	err := m.Lock(wctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	ok, err := m.TryLock(wctx, time.Second, 0)
	assert.False(t, ok)
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	require.NoError(t, m.Unlock(holder))
	eventually(t, 2*time.Second, func() bool {
		chans, err := rc.Do(ctx, rc.B().PubsubChannels().Pattern("*"+m.Name()+"*").Build()).AsStrSlice()
		return err == nil && len(chans) == 0 && c.Stats().Channels == 0
	}, "subscriptions left behind")
	keys, err := rc.Do(ctx, rc.B().Keys().Pattern("*"+m.Name()+"*").Build()).AsStrSlice()
	require.NoError(t, err)
	eventually(t, 2*time.Second, func() bool {
		keys, err = rc.Do(ctx, rc.B().Keys().Pattern("*"+m.Name()+"*").Build()).AsStrSlice()
		return err == nil && len(keys) == 0
	}, "keys left behind")
}

func TestForceUnlockWakesWaitersAndLosesHolds(t *testing.T) {
	c, _ := newClient(t)
	ctx := testCtx(t)
	m := rlock.New(c, lockName(t))
	holder := interlock.WithOwner(ctx, 1)
	require.NoError(t, m.Lock(holder))
	guard := m.Guard(holder)

	acquired := make(chan time.Time, 1)
	go func() {
		assert.NoError(t, m.Lock(ctx))
		acquired <- time.Now()
	}()
	eventually(t, 2*time.Second, func() bool { return c.Stats().Channels == 1 }, "waiter not subscribed")
	forced := time.Now()
	ok, err := rlock.New(c, m.Name()).ForceUnlock(ctx)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.ErrorIs(t, context.Cause(guard), rlock.ErrLockLost)
	select {
	case at := <-acquired:
		// Woken by the message, not the 30s TTL; two seconds for the late
		// wake-ups of a loaded machine (latency, not safety).
		assert.Less(t, at.Sub(forced), 2*time.Second)
	case <-time.After(5 * time.Second):
		t.Fatal("waiter not woken")
	}
	ok, err = m.ForceUnlock(ctx)
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = m.ForceUnlock(ctx)
	require.NoError(t, err)
	assert.False(t, ok)
}

func TestErrorsAreWrappedOnce(t *testing.T) {
	c, rc := newClient(t)
	ctx := testCtx(t)
	m := rlock.New(c, lockName(t))
	require.NoError(t, rc.Do(ctx, rc.B().Set().Key(m.Name()).Value("not a hash").Build()).Error())
	err := m.Lock(ctx)
	require.Error(t, err)
	assert.Equal(t, 1, strings.Count(err.Error(), "rlock: acquire"), err.Error())
	assert.Contains(t, err.Error(), m.Name()+" holds another type of data: a string")
}
