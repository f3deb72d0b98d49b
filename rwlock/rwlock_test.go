package rwlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/rwlock"
)

func TestReadLockUnlockLeavesNothing(t *testing.T) {
	c, rc := newClient(t)
	ctx := redistest.Context(t)
	rw := rwlock.New(c, lockName(t))
	r := rw.Read()

	require.NoError(t, r.Lock(ctx))
	o, err := c.Owner(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"mode": "read", o: "1"}, hash(t, rc, rw.Name()))
	timeout := "{" + rw.Name() + "}:" + o + ":rwlock_timeout:1"
	assert.InDelta(t, 30000, redistest.PTTL(t, rc, timeout), 2000)
	assert.True(t, redistest.Must[bool](t)(r.IsLocked(ctx)))
	assert.True(t, redistest.Must[bool](t)(r.IsHeld(ctx)))
	assert.False(t, redistest.Must[bool](t)(rw.Write().IsLocked(ctx)))
	assert.False(t, redistest.Must[bool](t)(rw.Write().IsHeld(ctx)))
	assert.InDelta(t, float64(interlock.DefaultWatchdogTimeout), float64(redistest.Must[time.Duration](t)(r.TTL(ctx))), float64(2*time.Second))

	require.NoError(t, r.Unlock(ctx))
	assert.False(t, redistest.Must[bool](t)(r.IsLocked(ctx)))
	redistest.Eventually(t, 2*time.Second, func() bool { return len(keysLike(t, rc, rw.Name())) == 0 }, "keys left behind after unlock")
	assert.Zero(t, c.Stats().Holds)
	assert.ErrorIs(t, r.Unlock(ctx), interlock.ErrNotHeld)
	assert.Zero(t, redistest.Must[time.Duration](t)(r.TTL(ctx)))
}

func TestWriteLockUnlockLeavesNothing(t *testing.T) {
	c, rc := newClient(t)
	ctx := redistest.Context(t)
	rw := rwlock.New(c, lockName(t))
	w := rw.Write()

	require.NoError(t, w.Lock(ctx))
	o, err := c.Owner(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"mode": "write", o + ":write": "1"}, hash(t, rc, rw.Name()))
	assert.True(t, redistest.Must[bool](t)(w.IsLocked(ctx)))
	assert.True(t, redistest.Must[bool](t)(w.IsHeld(ctx)))
	assert.False(t, redistest.Must[bool](t)(rw.Read().IsLocked(ctx)), "only a writer: the read lock is not locked")
	assert.InDelta(t, float64(interlock.DefaultWatchdogTimeout), float64(redistest.Must[time.Duration](t)(w.TTL(ctx))), float64(2*time.Second))

	require.NoError(t, w.Unlock(ctx))
	assert.False(t, redistest.Must[bool](t)(w.IsLocked(ctx)))
	redistest.Eventually(t, 2*time.Second, func() bool { return len(keysLike(t, rc, rw.Name())) == 0 }, "keys left behind after unlock")
	assert.Zero(t, c.Stats().Holds)
	assert.ErrorIs(t, w.Unlock(ctx), interlock.ErrNotHeld)
}

// TestCompatibilityMatrix is Redisson's: with the left side held, the
// attempt on the right succeeds or not.
func TestCompatibilityMatrix(t *testing.T) {
	c, _ := newClient(t)
	ctx := redistest.Context(t)
	rw := rwlock.New(c, lockName(t))
	a, b := owner(ctx), owner(ctx)
	try := func(ctx context.Context, l half) bool {
		t.Helper()
		return redistest.Must[bool](t)(l.TryLock(ctx, 0, 0))
	}

	// R(A) held.
	require.NoError(t, rw.Read().Lock(a))
	assert.True(t, try(b, rw.Read()), "R(A) held: R(B)")
	require.NoError(t, rw.Read().Unlock(b))
	assert.False(t, try(b, rw.Write()), "R(A) held: W(B)")
	_, err := rw.Write().TryLock(a, 0, 0)
	assert.ErrorIs(t, err, rwlock.ErrUpgrade, "R(A) held: W(A)")
	require.NoError(t, rw.Read().Unlock(a))

	// W(A) held.
	require.NoError(t, rw.Write().Lock(a))
	assert.False(t, try(b, rw.Read()), "W(A) held: R(B)")
	assert.False(t, try(b, rw.Write()), "W(A) held: W(B)")
	assert.True(t, try(a, rw.Write()), "W(A) held: W(A) re-enters")
	assert.True(t, try(a, rw.Read()), "W(A) held: R(A)")
	assert.True(t, try(a, rw.Write()), "W(A) and R(A) held: W(A) re-enters")
	assert.False(t, try(b, rw.Read()), "W(A) and R(A) held: R(B)")
	for range 3 {
		require.NoError(t, rw.Write().Unlock(a))
	}
	require.NoError(t, rw.Read().Unlock(a))
	assert.False(t, redistest.Must[bool](t)(rw.Read().IsLocked(ctx)))
}

func TestDowngrade(t *testing.T) {
	c, rc := newClient(t)
	ctx := redistest.Context(t)
	rw := rwlock.New(c, lockName(t))
	a, b := owner(ctx), owner(ctx)
	A, err := c.Owner(a)
	require.NoError(t, err)

	require.NoError(t, rw.Write().Lock(a))
	wguard := rw.Write().Guard(a)
	// B, a reader of this Client, waits for the writer.
	acquired := make(chan time.Time, 1)
	go func() {
		assert.NoError(t, rw.Read().Lock(b))
		acquired <- time.Now()
	}()
	redistest.Eventually(t, 2*time.Second, func() bool { return c.Stats().Channels == 1 }, "reader not waiting")
	time.Sleep(50 * time.Millisecond)

	require.NoError(t, rw.Read().Lock(a))
	assert.Equal(t, map[string]string{"mode": "write", A + ":write": "1", A: "1"}, hash(t, rc, rw.Name()))
	assert.True(t, redistest.Must[bool](t)(rw.Read().IsLocked(ctx)), "the writer's read hold makes the read lock locked")
	downgraded := time.Now()
	require.NoError(t, rw.Write().Unlock(a))
	h := hash(t, rc, rw.Name()) // B may be inside already
	assert.Equal(t, "read", h["mode"])
	assert.Equal(t, "1", h[A])
	assert.NotContains(t, h, A+":write")
	assert.ErrorIs(t, context.Cause(wguard), context.Canceled, "a downgrade releases the write hold")
	assert.NoError(t, rw.Read().Guard(a).Err(), "and keeps the read hold")

	// Nothing is published on a downgrade, but this Client's waiting
	// readers are woken at once (their TTL bound is 30s).
	select {
	case at := <-acquired:
		// Three seconds for the late wake-ups of a loaded machine
		// (latency, not safety).
		assert.Less(t, at.Sub(downgraded), 3*time.Second)
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting reader was not woken by the downgrade")
	}
	assert.False(t, redistest.Must[bool](t)(rw.Write().IsLocked(ctx)))
	_, err = rw.Write().TryLock(a, 0, 0)
	assert.ErrorIs(t, err, rwlock.ErrUpgrade)
	require.NoError(t, rw.Read().Unlock(a))
	assert.False(t, redistest.Must[bool](t)(rw.Write().TryLock(a, 0, 0)), "B still reads")
	require.NoError(t, rw.Read().Unlock(b))
	assert.True(t, redistest.Must[bool](t)(rw.Write().TryLock(a, 0, 0)))
	require.NoError(t, rw.Write().Unlock(a))
}

// TestUpgradeRefusedAtOnce: an owner holding only the read lock gets
// ErrUpgrade from every write acquisition, at once, with nothing sent.
func TestUpgradeRefusedAtOnce(t *testing.T) {
	f := &redistest.Hooked{Client: redistest.NewClient(t, addr)}
	c := wrap(t, f)
	ctx := redistest.Context(t)
	rw := rwlock.New(c, lockName(t))
	require.NoError(t, rw.Read().Lock(ctx))

	sent := f.Sent()
	start := time.Now()
	err := rw.Write().Lock(context.Background()) // no deadline: must not hang
	assert.ErrorIs(t, err, rwlock.ErrUpgrade)
	assert.EqualError(t, err, "rwlock.write: acquire "+rw.Name()+": rwlock: cannot upgrade a read lock to a write lock")
	var opErr *interlock.Error
	require.ErrorAs(t, err, &opErr)
	assert.Equal(t, interlock.Error{Kind: interlock.KindWriteLock, Op: interlock.OpAcquire, Name: rw.Name(), Err: rwlock.ErrUpgrade}, *opErr)
	assert.ErrorIs(t, rw.Write().LockLease(ctx, time.Second), rwlock.ErrUpgrade)
	ok, err := rw.Write().TryLock(ctx, 10*time.Second, 0)
	assert.False(t, ok)
	assert.ErrorIs(t, err, rwlock.ErrUpgrade)
	// At once, not after a wait; a loaded machine may still take its
	// time (latency).
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.Equal(t, sent, f.Sent(), "an upgrade attempt sent commands")

	// After the read holds are gone, the same owner may write.
	require.NoError(t, rw.Read().Unlock(ctx))
	require.NoError(t, rw.Write().Lock(ctx))
	require.NoError(t, rw.Write().Unlock(ctx))
}

// TestExpiredReadLeaseIsNoUpgrade: a read hold whose lease ran out (and
// that was never unlocked) does not make a later write an upgrade.
func TestExpiredReadLeaseIsNoUpgrade(t *testing.T) {
	c, _ := newClient(t)
	ctx := redistest.Context(t)
	rw := rwlock.New(c, lockName(t))
	require.NoError(t, rw.Read().LockLease(ctx, 100*time.Millisecond))
	time.Sleep(150 * time.Millisecond)
	ok, err := rw.Write().TryLock(ctx, time.Second, 0)
	require.NoError(t, err)
	assert.True(t, ok)
	require.NoError(t, rw.Write().Unlock(ctx))
}

// TestUpgradeWhileWaiting: an owner waits for the write lock; meanwhile
// another goroutine acting for the same owner takes the read lock. The
// writer must not wait for itself: it is woken and fails with ErrUpgrade.
func TestUpgradeWhileWaiting(t *testing.T) {
	c, _ := newClient(t)
	ctx := redistest.Context(t)
	rw := rwlock.New(c, lockName(t))
	x, y := owner(ctx), owner(ctx)
	require.NoError(t, rw.Read().Lock(y))

	done := make(chan error, 1)
	go func() { done <- rw.Write().Lock(x) }()
	redistest.Eventually(t, 2*time.Second, func() bool { return c.Stats().Channels == 1 }, "writer not waiting")
	time.Sleep(100 * time.Millisecond)    // let it park, bound by the reader's 30s TTL
	require.NoError(t, rw.Read().Lock(x)) // read mode: it gets in
	require.NoError(t, rw.Read().Unlock(y))
	select {
	case err := <-done:
		assert.ErrorIs(t, err, rwlock.ErrUpgrade)
	case <-time.After(5 * time.Second):
		t.Fatal("the writer waits for its own read hold")
	}
	require.NoError(t, rw.Read().Unlock(x))
}

func TestWriterWaitsForLastReader(t *testing.T) {
	c, _ := newClient(t)
	ctx := redistest.Context(t)
	rw := rwlock.New(c, lockName(t))
	r1, r2, w := owner(ctx), owner(ctx), owner(ctx)
	require.NoError(t, rw.Read().Lock(r1))
	require.NoError(t, rw.Read().Lock(r2))

	acquired := make(chan time.Time, 1)
	go func() {
		assert.NoError(t, rw.Write().Lock(w))
		acquired <- time.Now()
	}()
	redistest.Eventually(t, 2*time.Second, func() bool { return c.Stats().Channels == 1 }, "writer not waiting")
	require.NoError(t, rw.Read().Unlock(r2))
	select {
	case <-acquired:
		t.Fatal("the writer got in while a reader held the lock")
	case <-time.After(300 * time.Millisecond):
	}
	released := time.Now()
	require.NoError(t, rw.Read().Unlock(r1))
	select {
	case at := <-acquired:
		// Not the 30s TTL; three seconds for the late wake-ups of a loaded
		// machine (latency, not safety).
		assert.Less(t, at.Sub(released), 3*time.Second, "woken by the last reader's release")
	case <-time.After(5 * time.Second):
		t.Fatal("the writer was not woken by the last reader")
	}
	require.NoError(t, rw.Write().Unlock(w))
}

// TestReaderUnlockRecomputesTTL: when one reader leaves, the lock lives as
// long as the longest remaining read hold, not as long as the one that
// left; a writer then gets in when that hold's lease ends.
func TestReaderUnlockRecomputesTTL(t *testing.T) {
	c, rc := newClient(t)
	ctx := redistest.Context(t)
	rw := rwlock.New(c, lockName(t))
	a, b := owner(ctx), owner(ctx)
	require.NoError(t, rw.Read().LockLease(a, 1500*time.Millisecond))
	start := time.Now()
	require.NoError(t, rw.Read().LockLease(b, 20*time.Second))
	assert.InDelta(t, 20000, redistest.PTTL(t, rc, rw.Name()), 2000, "a read acquisition extends the TTL")
	require.NoError(t, rw.Read().Unlock(b))
	left := redistest.PTTL(t, rc, rw.Name())
	assert.True(t, left > 0 && left <= 1500, "PTTL after B left: %d, want A's remaining lease", left)

	ok, err := rw.Write().TryLock(owner(ctx), 5*time.Second, 0)
	require.NoError(t, err)
	assert.True(t, ok)
	took := time.Since(start)
	assert.Greater(t, took, time.Second, "the writer got in before A's lease ended")
	assert.Less(t, took, 3500*time.Millisecond, "the writer waited for B's lease")
}

// TestReentrantReadPartialUnlockRestoresTTL: releasing a long inner read
// hold brings the TTL back to the outer hold's remaining lease.
func TestReentrantReadPartialUnlockRestoresTTL(t *testing.T) {
	c, rc := newClient(t)
	ctx := redistest.Context(t)
	rw := rwlock.New(c, lockName(t))
	require.NoError(t, rw.Read().LockLease(ctx, 2*time.Second))
	require.NoError(t, rw.Read().LockLease(ctx, 10*time.Second))
	assert.Equal(t, 2, redistest.Must[int](t)(rw.Read().HoldCount(ctx)))
	assert.InDelta(t, 10000, redistest.PTTL(t, rc, rw.Name()), 2000)
	require.NoError(t, rw.Read().Unlock(ctx))
	left := redistest.PTTL(t, rc, rw.Name())
	assert.True(t, left > 0 && left <= 2000, "PTTL after the partial unlock: %d", left)
	require.NoError(t, rw.Read().Unlock(ctx))
}

// TestReentrantWriteLeaseAdditive: a write re-entry adds its lease to the
// remaining TTL (Redisson), and the lock stays exclusive.
func TestReentrantWriteLeaseAdditive(t *testing.T) {
	c, rc := newClient(t)
	ctx := redistest.Context(t)
	rw := rwlock.New(c, lockName(t))
	require.NoError(t, rw.Write().LockLease(ctx, 10*time.Second))
	require.NoError(t, rw.Write().LockLease(ctx, time.Second))
	assert.InDelta(t, 11000, redistest.PTTL(t, rc, rw.Name()), 1500)
	assert.False(t, redistest.Must[bool](t)(rw.Write().TryLock(owner(ctx), 200*time.Millisecond, time.Second)))
	require.NoError(t, rw.Write().Unlock(ctx))
	require.NoError(t, rw.Write().Unlock(ctx))
}

func TestIsLockedAndForceUnlockAreModeSpecific(t *testing.T) {
	c, _ := newClient(t)
	ctx := redistest.Context(t)
	rw := rwlock.New(c, lockName(t))
	a := owner(ctx)
	r, w := rw.Read(), rw.Write()

	assert.False(t, redistest.Must[bool](t)(r.ForceUnlock(ctx)), "free lock")
	assert.False(t, redistest.Must[bool](t)(w.ForceUnlock(ctx)), "free lock")

	require.NoError(t, r.Lock(a))
	guard := r.Guard(a)
	assert.True(t, redistest.Must[bool](t)(r.IsLocked(ctx)))
	assert.False(t, redistest.Must[bool](t)(w.IsLocked(ctx)))
	assert.False(t, redistest.Must[bool](t)(w.ForceUnlock(ctx)), "W.forceUnlock leaves a read lock")
	require.NoError(t, guard.Err())
	assert.True(t, redistest.Must[bool](t)(r.ForceUnlock(ctx)))
	assert.ErrorIs(t, context.Cause(guard), interlock.ErrLockLost)
	assert.False(t, redistest.Must[bool](t)(r.IsLocked(ctx)))

	require.NoError(t, w.Lock(a))
	guard = w.Guard(a)
	assert.False(t, redistest.Must[bool](t)(r.IsLocked(ctx)))
	assert.True(t, redistest.Must[bool](t)(w.IsLocked(ctx)))
	assert.False(t, redistest.Must[bool](t)(r.ForceUnlock(ctx)), "R.forceUnlock leaves a write lock")
	require.NoError(t, guard.Err())
	assert.True(t, redistest.Must[bool](t)(w.ForceUnlock(ctx)))
	assert.ErrorIs(t, context.Cause(guard), interlock.ErrLockLost)
	assert.False(t, redistest.Must[bool](t)(rwlock.New(c, rw.Name()).Write().IsLocked(ctx)))
	assert.Zero(t, c.Stats().Holds)
}

func TestHoldCounts(t *testing.T) {
	c, _ := newClient(t)
	ctx := redistest.Context(t)
	rw := rwlock.New(c, lockName(t))
	for _, l := range []half{rw.Read(), rw.Write()} {
		count := func() int { return redistest.Must[int](t)(l.HoldCount(ctx)) }
		assert.Equal(t, 0, count())
		require.NoError(t, l.Lock(ctx))
		assert.Equal(t, 1, count())
		require.NoError(t, l.Unlock(ctx))
		assert.Equal(t, 0, count())
		require.NoError(t, l.Lock(ctx))
		require.NoError(t, l.Lock(ctx))
		assert.Equal(t, 2, count())
		require.NoError(t, l.Unlock(ctx))
		assert.Equal(t, 1, count())
		require.NoError(t, l.Unlock(ctx))
		assert.Equal(t, 0, count())
	}
}

func TestUnlockByNonOwnerFails(t *testing.T) {
	c, rc := newClient(t)
	ctx := redistest.Context(t)
	rw := rwlock.New(c, lockName(t))
	b := owner(ctx)
	require.NoError(t, rw.Read().Lock(b))
	assert.ErrorIs(t, rw.Read().Unlock(ctx), interlock.ErrNotHeld)
	assert.ErrorIs(t, rw.Write().Unlock(ctx), interlock.ErrNotHeld)
	assert.ErrorIs(t, rw.Write().Unlock(b), interlock.ErrNotHeld, "B reads, it does not write")
	B, err := c.Owner(b)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"mode": "read", B: "1"}, hash(t, rc, rw.Name()))
	require.NoError(t, rw.Read().Unlock(b))
}

// TestWriteLeaseExpiry: a writer with a lease is replaced when it ends
// (woken by its TTL: an expiry publishes nothing), and can then no longer
// unlock.
func TestWriteLeaseExpiry(t *testing.T) {
	c, _ := newClient(t)
	ctx := redistest.Context(t)
	rw := rwlock.New(c, lockName(t))
	a := owner(ctx)
	require.NoError(t, rw.Write().LockLease(a, 400*time.Millisecond))
	start := time.Now()
	require.NoError(t, rw.Write().Lock(ctx))
	took := time.Since(start)
	assert.Greater(t, took, 250*time.Millisecond)
	assert.Less(t, took, 1500*time.Millisecond)
	assert.ErrorIs(t, rw.Write().Unlock(a), interlock.ErrNotHeld)
	require.NoError(t, rw.Write().Unlock(ctx))
}

// TestReadersWaitForWriteLeaseExpiry: readers blocked by a writer that
// never unlocks get in when its lease ends.
func TestReadersWaitForWriteLeaseExpiry(t *testing.T) {
	c, _ := newClient(t)
	ctx := redistest.Context(t)
	rw := rwlock.New(c, lockName(t))
	require.NoError(t, rw.Write().LockLease(owner(ctx), 500*time.Millisecond))
	start := time.Now()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			r := owner(ctx)
			assert.NoError(t, rw.Read().Lock(r))
			assert.Less(t, time.Since(start), 2*time.Second)
			assert.NoError(t, rw.Read().Unlock(r))
		})
	}
	wg.Wait()
}

// TestNameWithHashTagAndColons: the timeout keys of a name that has its
// own hash tag are name:<owner>:rwlock_timeout:k.
func TestNameWithHashTagAndColons(t *testing.T) {
	c, rc := newClient(t)
	ctx := redistest.Context(t)
	name := "{" + lockName(t) + "}:abc:key"
	rw := rwlock.New(c, name)
	require.NoError(t, rw.Read().Lock(ctx))
	o, err := c.Owner(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), redistest.Must[int64](t)(rc.Do(ctx, rc.B().Exists().Key(name+":"+o+":rwlock_timeout:1").Build()).AsInt64()))
	require.NoError(t, rw.Read().Unlock(ctx))

	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			for range 10 {
				if !assert.NoError(t, rw.Read().Lock(ctx)) {
					return
				}
				assert.NoError(t, rw.Read().Unlock(ctx))
			}
		})
	}
	wg.Wait()
	redistest.Eventually(t, 2*time.Second, func() bool { return len(keysLike(t, rc, lockName(t))) == 0 }, "keys left behind")
}

func TestCancelWhileWaitingLeavesNothing(t *testing.T) {
	c, rc := newClient(t)
	ctx := redistest.Context(t)
	rw := rwlock.New(c, lockName(t))
	holder := owner(ctx)
	require.NoError(t, rw.Write().Lock(holder))

	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, rw.Read().Lock(wctx), context.DeadlineExceeded)
	assert.ErrorIs(t, rw.Write().Lock(wctx), context.DeadlineExceeded)
	ok, err := rw.Read().TryLock(ctx, 100*time.Millisecond, 0)
	assert.False(t, ok)
	assert.NoError(t, err, "a wait that runs out is (false, nil)")

	require.NoError(t, rw.Write().Unlock(holder))
	redistest.Eventually(t, 2*time.Second, func() bool {
		chans, err := rc.Do(ctx, rc.B().PubsubChannels().Pattern("*"+rw.Name()+"*").Build()).AsStrSlice()
		return err == nil && len(chans) == 0 && c.Stats().Channels == 0
	}, "subscriptions left behind")
	redistest.Eventually(t, 2*time.Second, func() bool { return len(keysLike(t, rc, rw.Name())) == 0 }, "keys left behind")
	assert.Zero(t, c.Stats().Holds)
}
