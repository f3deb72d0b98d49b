package conformance_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
)

// reentrancy: the hold count goes up with every acquisition of the holder
// and down with every Unlock; only the last Unlock frees the lock.
func (s *suite) reentrancy(t *testing.T) {
	if s.Reentered != nil {
		s.refusedReentry(t)
		return
	}
	c, rc := s.newClient(t)
	ctx := testCtx(t)
	name := s.lockName(t)
	m, rival := s.New(c, name), s.rival(c, name)
	count := func() int { t.Helper(); return must[int](t)(m.HoldCount(ctx)) }
	locked := func() bool { t.Helper(); return must[bool](t)(m.IsLocked(ctx)) }
	excluded := func() bool {
		t.Helper()
		o := other(ctx)
		ok, err := rival.TryLock(o, 0, 0)
		require.NoError(t, err)
		if ok {
			require.NoError(t, rival.Unlock(o))
		}
		return !ok
	}

	assert.Zero(t, count())
	require.NoError(t, m.Lock(ctx))
	assert.Equal(t, 1, count())
	require.NoError(t, m.LockLease(ctx, 10*time.Second))
	assert.Equal(t, 2, count())
	ok, err := m.TryLock(ctx, 0, 0)
	require.NoError(t, err)
	assert.True(t, ok, "the holder re-enters at once")
	assert.Equal(t, 3, count())
	assert.True(t, must[bool](t)(m.IsHeld(ctx)))
	assert.True(t, excluded())

	o := other(ctx)
	ok, err = m.TryLock(o, 0, 0)
	require.NoError(t, err)
	if s.Shared != nil {
		assert.True(t, ok, "a shared hold admits another owner")
		assert.True(t, must[bool](t)(m.IsHeld(o)))
		require.NoError(t, m.Unlock(o))
	} else {
		assert.False(t, ok, "a second owner is refused")
		assert.False(t, must[bool](t)(m.IsHeld(o)))
		assert.ErrorIs(t, m.Unlock(o), interlock.ErrNotHeld)
	}

	for want := 2; want >= 1; want-- {
		require.NoError(t, m.Unlock(ctx))
		assert.Equal(t, want, count())
		assert.True(t, locked(), "freed before the last Unlock")
		assert.True(t, excluded())
	}
	require.NoError(t, m.Unlock(ctx))
	assert.Zero(t, count())
	assert.False(t, locked())
	assert.False(t, excluded(), "another owner acquires after the last Unlock")
	assert.ErrorIs(t, m.Unlock(ctx), interlock.ErrNotHeld)
	s.nothingLeft(t, c, rc, name)
}

// lockLease: a LockLease hold ends by itself, and its guard with it.
func (s *suite) lockLease(t *testing.T) {
	// A second, so that the TTL read after the acquire's reply still finds
	// the hold on a loaded machine, where the two round trips can take
	// hundreds of milliseconds.
	const lease = time.Second
	c, rc := s.newClient(t)
	ctx := testCtx(t)
	name := s.lockName(t)
	m := s.New(c, name)

	require.NoError(t, m.LockLease(ctx, lease))
	start := time.Now()
	ttl := must[time.Duration](t)(m.TTL(ctx))
	assert.Positive(t, ttl)
	assert.LessOrEqual(t, ttl, lease)
	assert.True(t, must[bool](t)(m.IsHeld(ctx)))
	g := m.Guard(ctx)
	select {
	case <-g.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the guard of a lease hold did not end")
	}
	assert.ErrorIs(t, context.Cause(g), interlock.ErrLockLost)
	assert.ErrorIs(t, context.Cause(g), interlock.ErrLeaseExpired)
	// At the lease, give or take two seconds for the late timers of a loaded
	// machine (latency, not safety).
	assert.Less(t, time.Since(start), lease+2*time.Second)

	// The guard ends a little before the server expires the key: its clock
	// starts when the acquire was sent.
	require.Eventually(t, func() bool {
		locked, err := m.IsLocked(ctx)
		return err == nil && !locked
	}, 2*time.Second, 5*time.Millisecond, "the lease did not end on the server")
	assert.ErrorIs(t, context.Cause(m.Guard(ctx)), interlock.ErrLockLost, "the lease ran out before any Unlock")
	assert.Zero(t, m.Remaining(ctx))
	assert.ErrorIs(t, m.Unlock(ctx), interlock.ErrNotHeld)
	assert.ErrorIs(t, context.Cause(m.Guard(ctx)), interlock.ErrNotHeld)
	s.nothingLeft(t, c, rc, name)
}

// tryLockLease: TryLock with a lease acquires a hold that ends by itself;
// a TryLock that finds the lock busy for its whole wait is (false, nil).
func (s *suite) tryLockLease(t *testing.T) {
	const lease = 500 * time.Millisecond
	c, rc := s.newClient(t)
	ctx := testCtx(t)
	name := s.lockName(t)
	m, rival := s.New(c, name), s.rival(c, name)

	// The lease counts from the send: however late the reply, the rival
	// may take over no earlier than a lease after this.
	start := time.Now()
	ok, err := m.TryLock(ctx, 0, lease)
	require.NoError(t, err)
	require.True(t, ok)
	ttl := must[time.Duration](t)(m.TTL(ctx))
	assert.Positive(t, ttl)
	assert.LessOrEqual(t, ttl, lease)

	o := other(ctx)
	ok, err = rival.TryLock(o, 100*time.Millisecond, 0)
	require.NoError(t, err)
	assert.False(t, ok, "busy for the whole wait")
	assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)
	ok, err = rival.TryLock(o, 5*time.Second, 0)
	require.NoError(t, err)
	assert.True(t, ok, "the lease did not end by itself")
	took := time.Since(start)
	assert.GreaterOrEqual(t, took, lease, "acquired before the lease ended")
	// Latency: the rival retries when the PTTL it read runs out (an expiry
	// publishes nothing); beside a loaded matrix that took 2.18 s once.
	// A rival that missed the expiry would have failed at its 5 s wait.
	assert.Less(t, took, 4*time.Second)
	assert.ErrorIs(t, m.Unlock(ctx), interlock.ErrNotHeld)
	require.NoError(t, rival.Unlock(o))
	s.nothingLeft(t, c, rc, name)
}

// guardReleased: a guard ends with context.Canceled once the last hold is
// released, by the time that Unlock returns.
func (s *suite) guardReleased(t *testing.T) {
	c, rc := s.newClient(t)
	ctx := testCtx(t)
	name := s.lockName(t)
	m := s.New(c, name)
	for range s.depth() {
		require.NoError(t, m.Lock(ctx))
	}
	g := m.Guard(ctx)
	require.NoError(t, g.Err())

	if s.depth() == 2 {
		require.NoError(t, m.Unlock(ctx))
		assert.NoError(t, g.Err(), "a hold remains")
	}
	require.NoError(t, m.Unlock(ctx))
	require.Error(t, g.Err(), "the guard outlived the last Unlock")
	assert.ErrorIs(t, context.Cause(g), context.Canceled, "a release is not a loss")
	assert.NotErrorIs(t, context.Cause(g), interlock.ErrLockLost)
	s.nothingLeft(t, c, rc, name)
}

// guardRepeated: Guard called again and again during one hold, with a
// context that never ends, keeps nothing per call, and every guard still
// ends with the hold.
func (s *suite) guardRepeated(t *testing.T) {
	c, rc := s.newClient(t)
	ctx := testCtx(t)
	name := s.lockName(t)
	m := s.New(c, name)
	require.NoError(t, m.Lock(ctx))
	held := context.Background() // the same owner: this goroutine
	first := m.Guard(held)
	require.NoError(t, first.Err())
	// The least of three measurements: the other targets' clients, closing
	// meanwhile, can only add to the heap, while a leak shows in each.
	const calls = 20_000
	var grown int64
	for range 3 {
		before := liveHeap()
		for range calls {
			require.NoError(t, m.Guard(held).Err())
		}
		if grown = liveHeap() - before; grown/calls < 64 {
			break
		}
	}
	assert.Less(t, grown/calls, int64(64), "bytes kept per Guard call (%d in all)", grown)
	require.NoError(t, m.Unlock(ctx))
	require.Error(t, first.Err(), "the guard outlived the Unlock")
	assert.ErrorIs(t, context.Cause(first), context.Canceled)
	s.nothingLeft(t, c, rc, name)
}

// liveHeap returns the bytes of live heap objects, after a collection.
func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// guardDeleted: a guard ends with ErrLockLost within about one renewal
// interval of its key being deleted.
func (s *suite) guardDeleted(t *testing.T) {
	// Renewed every 667ms; the hold, just taken, would run out unrenewed
	// only 2s after its key was deleted.
	const watchdog = 2 * time.Second
	c, rc := s.newClient(t, interlock.WithWatchdogTimeout(watchdog))
	ctx := testCtx(t)
	name := s.lockName(t)
	m := s.New(c, name)
	require.NoError(t, m.Lock(ctx))
	g := m.Guard(ctx)

	require.NoError(t, rc.Do(ctx, rc.B().Del().Key(name).Build()).Error())
	deleted := time.Now()
	select {
	case <-g.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("guard not cancelled")
	}
	took := time.Since(deleted)
	assert.ErrorIs(t, context.Cause(g), interlock.ErrLockLost)
	assert.ErrorIs(t, context.Cause(g), interlock.ErrKeyGone)
	// Found by the next renewal, one interval at most, plus a second for
	// the late wake-ups of a loaded machine (latency, not safety): still
	// before the validity would have run out.
	assert.Less(t, took, watchdog/3+time.Second)
	t.Logf("loss reported %v after the key was deleted", took.Round(time.Millisecond))
	assert.Zero(t, m.Remaining(ctx))
	assert.ErrorIs(t, m.Unlock(ctx), interlock.ErrNotHeld)
}

// guardForceUnlocked: ForceUnlock ends this Client's guards on the lock
// with ErrLockLost before it returns, another Client's at its next
// renewal.
func (s *suite) guardForceUnlocked(t *testing.T) {
	const watchdog = time.Second
	c, rc := s.newClient(t, interlock.WithWatchdogTimeout(watchdog))
	ctx := testCtx(t)
	name := s.lockName(t)
	m := s.New(c, name)
	holder := other(ctx)
	require.NoError(t, m.Lock(holder))
	g := m.Guard(holder)

	ok, err := s.New(c, name).ForceUnlock(ctx)
	require.NoError(t, err)
	assert.True(t, ok)
	require.Error(t, g.Err(), "the guard outlived ForceUnlock")
	assert.ErrorIs(t, context.Cause(g), interlock.ErrLockLost)
	assert.ErrorIs(t, context.Cause(g), interlock.ErrForceUnlocked)
	assert.Zero(t, m.Remaining(holder))
	assert.ErrorIs(t, m.Unlock(holder), interlock.ErrNotHeld)
	ok, err = m.ForceUnlock(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "nothing left to delete")

	// Forced from another Client.
	require.NoError(t, m.Lock(holder))
	g = m.Guard(holder)
	c2, _ := s.newClient(t)
	ok, err = s.New(c2, name).ForceUnlock(ctx)
	require.NoError(t, err)
	assert.True(t, ok)
	select {
	case <-g.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("guard not cancelled")
	}
	assert.ErrorIs(t, context.Cause(g), interlock.ErrLockLost)
	assert.ErrorIs(t, context.Cause(g), interlock.ErrKeyGone, "found gone by renewal")
	assert.ErrorIs(t, m.Unlock(holder), interlock.ErrNotHeld)
	s.nothingLeft(t, c, rc, name)
}

// guardNotHeld: the guard of an owner that holds nothing is cancelled at
// once, its cause wrapping ErrNotHeld.
func (s *suite) guardNotHeld(t *testing.T) {
	c, _ := s.newClient(t)
	ctx := testCtx(t)
	name := s.lockName(t)
	m := s.New(c, name)
	check := func(g context.Context) {
		t.Helper()
		require.Error(t, g.Err(), "not cancelled at once")
		cause := context.Cause(g)
		assert.ErrorIs(t, cause, interlock.ErrNotHeld)
		var e *interlock.Error
		if assert.ErrorAs(t, cause, &e) {
			assert.Equal(t, s.Name, e.Kind)
			assert.Equal(t, interlock.OpGuard, e.Op)
			assert.Equal(t, name, e.Name)
		}
	}
	check(m.Guard(ctx))
	o := other(ctx)
	require.NoError(t, m.Lock(o))
	check(m.Guard(ctx))
	require.NoError(t, m.Unlock(o))
	check(m.Guard(o))
}

// remaining: how long a hold is certainly valid, 0 when there is none.
func (s *suite) remaining(t *testing.T) {
	// 3s: beside a CPU hog a cluster's renewal once came a lease of
	// 1.5s late, and the hold was lost.
	const lease = 3 * time.Second
	c, rc := s.newClient(t, interlock.WithWatchdogTimeout(lease))
	ctx := testCtx(t)
	name := s.lockName(t)
	m := s.New(c, name)
	assert.Zero(t, m.Remaining(ctx), "not held")

	// A watchdog hold, past its lease, stays above 2/3 of the lease (2s)
	// across renewals, less the slack of a loaded machine, where a renewal
	// can come 600ms late or more (latency, not safety: the floor is a
	// fifth of the lease).
	require.NoError(t, m.Lock(ctx))
	low := lease
	for end := time.Now().Add(4 * lease / 3); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		low = min(low, m.Remaining(ctx))
	}
	assert.Greater(t, low, lease/5, "lowest %v", low)
	assert.Zero(t, m.Remaining(other(ctx)), "another owner holds nothing")
	require.NoError(t, m.Unlock(ctx))
	assert.Zero(t, m.Remaining(ctx), "released")

	// A fixed lease counts down, released ... It counts from the send, so
	// it is short by no more than the time since, however long a loaded
	// machine took; 2s leave the Unlock below time to come first.
	start := time.Now()
	require.NoError(t, m.LockLease(ctx, 2*time.Second))
	first := m.Remaining(ctx)
	assert.LessOrEqual(t, first, 2*time.Second)
	assert.GreaterOrEqual(t, first, 2*time.Second-time.Since(start))
	time.Sleep(100 * time.Millisecond)
	assert.Less(t, m.Remaining(ctx), first-90*time.Millisecond)
	require.NoError(t, m.Unlock(ctx))
	assert.Zero(t, m.Remaining(ctx), "released")

	// ... or run out.
	start = time.Now()
	require.NoError(t, m.LockLease(ctx, 400*time.Millisecond))
	first = m.Remaining(ctx)
	assert.GreaterOrEqual(t, first, 400*time.Millisecond-time.Since(start))
	time.Sleep(first)
	assert.Zero(t, m.Remaining(ctx), "expired")
	// The server's TTL started a little after the send Remaining counts
	// from: wait for the key to go, so the next Lock is a fresh hold.
	require.Eventually(t, func() bool { return !s.exists(t, rc, name) }, 5*time.Second, 5*time.Millisecond)

	// A lost hold has none left.
	require.NoError(t, m.Lock(ctx))
	_, err := m.ForceUnlock(ctx)
	require.NoError(t, err)
	assert.Zero(t, m.Remaining(ctx))
	s.nothingLeft(t, c, rc, name)
}

// notHeldError: Unlock by an owner that holds nothing returns an
// *interlock.Error of the kind, op release, wrapping ErrNotHeld; while the
// Client holds the lock for another owner, its text names that owner.
func (s *suite) notHeldError(t *testing.T) {
	c, _ := s.newClient(t)
	ctx := testCtx(t)
	name := s.lockName(t)
	m := s.New(c, name)
	prefix := string(s.Name) + ": release " + name + ": interlock: lock not held by this owner"
	check := func(err error, text string) {
		t.Helper()
		require.ErrorIs(t, err, interlock.ErrNotHeld)
		var e *interlock.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, s.Name, e.Kind)
		assert.Equal(t, interlock.OpRelease, e.Op)
		assert.Equal(t, name, e.Name)
		assert.True(t, errors.Is(e.Err, interlock.ErrNotHeld))
		assert.Equal(t, prefix+text, err.Error())
	}
	check(m.Unlock(ctx), "") // never held
	o := other(ctx)
	holder := must[int64](t)(interlock.OwnerID(o))
	caller := must[int64](t)(interlock.OwnerID(ctx))
	require.NoError(t, m.Lock(o))
	err := m.Unlock(ctx) // held by another owner
	check(err, err.Error()[len(prefix):])
	assert.Contains(t, err.Error(), fmt.Sprintf(": owner %d holds nothing, but this Client holds the lock for owner %d", caller, holder))
	assert.Contains(t, err.Error(), "interlock.WithOwner")
	assert.Contains(t, err.Error(), "interlock.Lock")
	require.NoError(t, m.Unlock(o))
	check(m.Unlock(o), "") // released
}

// refusedReentry: a non-reentrant kind refuses every second acquisition
// by the holder at once, whatever its wait, and keeps the one hold.
func (s *suite) refusedReentry(t *testing.T) {
	c, rc := s.newClient(t)
	ctx := testCtx(t)
	name := s.lockName(t)
	m := s.New(c, name)
	count := func() int { t.Helper(); return must[int](t)(m.HoldCount(ctx)) }

	require.NoError(t, m.Lock(ctx))
	start := time.Now()
	for what, again := range map[string]func() error{
		"Lock":      func() error { return m.Lock(ctx) },
		"LockLease": func() error { return m.LockLease(ctx, 10*time.Second) },
		"TryLock":   func() error { _, err := m.TryLock(ctx, 0, 0); return err },
		"TryLock with a wait": func() error {
			_, err := m.TryLock(ctx, 5*time.Second, 0)
			return err
		},
	} {
		err := again()
		assert.ErrorIs(t, err, s.Reentered, what)
		var ie *interlock.Error
		assert.True(t, errors.As(err, &ie), "%s: %T", what, err)
		assert.Equal(t, 1, count(), "%s took no second hold", what)
	}
	assert.Less(t, time.Since(start), 2*time.Second, "refused at once, not after a wait")

	o := other(ctx)
	ok, err := m.TryLock(o, 0, 0)
	require.NoError(t, err)
	assert.False(t, ok, "a second owner is refused")
	require.NoError(t, m.Unlock(ctx))
	assert.False(t, must[bool](t)(m.IsLocked(ctx)))
	assert.ErrorIs(t, m.Unlock(ctx), interlock.ErrNotHeld)
	s.nothingLeft(t, c, rc, name)
}
