package conformance_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
)

// extendLease: a lease hold extended before its lease ends stays held past
// it, with the key's TTL, Remaining and the Guard's deadline all at the new
// lease; once that has run out, Extend fails with ErrNotHeld and takes
// nothing.
func (s *suite) extendLease(t *testing.T) {
	const (
		first    = 100 * time.Millisecond
		extended = 400 * time.Millisecond
	)
	c, _ := s.newClient(t)
	ctx := testCtx(t)
	name := s.lockName(t)
	m, rival := s.New(c, name), s.rival(c, name)

	var (
		locking, sent time.Time
		g, shared     context.Context
	)
	for try := 1; ; try++ {
		locking = time.Now()
		require.NoError(t, m.LockLease(ctx, first))
		g, shared = m.Guard(ctx), m.Guard(context.Background())
		sent = time.Now()
		err := m.Extend(ctx, extended)
		if err == nil {
			break
		}
		// A loaded machine may stall past the first lease before the
		// Extend goes out, which then rightly finds it ended: again, on a
		// lock whose lease has run out on the server too.
		require.ErrorIs(t, err, interlock.ErrNotHeld)
		require.GreaterOrEqual(t, time.Since(locking), first, "Extend found the lease ended before it could have")
		require.Less(t, try, 3, "the first lease ran out before the Extend three times in a row")
		require.Eventually(t, func() bool { return must[time.Duration](t)(m.TTL(ctx)) <= 0 }, time.Second, 5*time.Millisecond)
	}
	// The guards outlive the first lease only if the Extend's answer came
	// before it ended: a loaded machine may answer later, and the Client
	// then ends them at the first lease, as it must.
	inTime := time.Since(locking) < first
	// Whatever the machine's load, the TTL and Remaining lie between the
	// new lease and the new lease less the time since the Extend was sent
	// (and the millisecond PTTL rounds off).
	ttl := must[time.Duration](t)(m.TTL(ctx))
	assert.LessOrEqual(t, ttl, extended, "key TTL")
	assert.GreaterOrEqual(t, ttl, extended-time.Since(sent)-time.Millisecond, "key TTL")
	left := m.Remaining(ctx)
	assert.LessOrEqual(t, left, extended, "Remaining")
	assert.GreaterOrEqual(t, left, extended-time.Since(sent), "Remaining")

	// Past the first lease: still held, on the server and by the guards.
	time.Sleep(time.Until(sent.Add(first + 100*time.Millisecond)))
	rctx := other(ctx)
	ok, err := rival.TryLock(rctx, 0, 0)
	require.NoError(t, err)
	if time.Since(sent) < extended {
		assert.False(t, ok, "another owner took the lock within its extended lease")
		if inTime {
			assert.NoError(t, g.Err(), "the guard ended at the first lease")
			assert.NoError(t, shared.Err(), "the shared guard ended at the first lease")
			assert.True(t, must[bool](t)(m.IsHeld(ctx)))
		}
	}
	if ok {
		// A loaded machine slept past the extended lease, and the rival
		// took the lock for real: it lets go, for the checks below.
		require.NoError(t, rival.Unlock(rctx))
	}

	// The guards end with the new lease, not before it.
	for _, g := range []context.Context{g, shared} {
		select {
		case <-g.Done():
		case <-time.After(extended + 2*time.Second):
			t.Fatal("the guard of an extended hold did not end")
		}
		if inTime {
			assert.GreaterOrEqual(t, time.Since(sent), extended, "the guard ended before the extended lease")
		}
		assert.ErrorIs(t, context.Cause(g), interlock.ErrLeaseExpired)
	}
	if !inTime {
		// The guards ended at the first lease; the hold the late answer
		// confirmed lasts until the new lease runs out, locally and on the
		// server.
		require.Eventually(t, func() bool {
			return m.Remaining(ctx) == 0 && must[time.Duration](t)(m.TTL(ctx)) <= 0
		}, extended+2*time.Second, 5*time.Millisecond)
	}
	assert.Zero(t, m.Remaining(ctx))

	err = m.Extend(ctx, extended)
	assert.ErrorIs(t, err, interlock.ErrNotHeld)
	if e, ok := errors.AsType[*interlock.Error](err); assert.True(t, ok, "%T", err) {
		assert.Equal(t, s.Name, e.Kind)
		assert.Equal(t, interlock.OpExtend, e.Op)
		assert.Equal(t, name, e.Name)
	}
	require.Eventually(t, func() bool {
		ok, err := rival.TryLock(other(ctx), 0, time.Second)
		return err == nil && ok
	}, 2*time.Second, 10*time.Millisecond, "the extended lease did not end on the server")
	assert.ErrorIs(t, m.Extend(ctx, extended), interlock.ErrNotHeld, "an Extend took the lock back")
}

// extendWatchdog: a watchdog hold accepts Extend, which renews it with the
// watchdog timeout and leaves it a watchdog hold, whatever lease it asks.
func (s *suite) extendWatchdog(t *testing.T) {
	c, _ := s.newClient(t, interlock.WithWatchdogTimeout(3*time.Second))
	ctx := testCtx(t)
	name := s.lockName(t)
	m := s.New(c, name)

	require.NoError(t, m.Lock(ctx))
	sent := time.Now()
	require.NoError(t, m.Extend(ctx, 100*time.Millisecond))
	ttl := must[time.Duration](t)(m.TTL(ctx))
	assert.LessOrEqual(t, ttl, 3*time.Second)
	assert.GreaterOrEqual(t, ttl, 3*time.Second-time.Since(sent)-time.Millisecond, "renewed with the watchdog timeout")
	assert.GreaterOrEqual(t, m.Remaining(ctx), 3*time.Second-time.Since(sent))
	g := m.Guard(ctx)
	time.Sleep(100 * time.Millisecond)
	assert.NoError(t, g.Err(), "a watchdog hold got a deadline")
	require.NoError(t, m.Unlock(ctx))
	assert.ErrorIs(t, m.Extend(ctx, time.Second), interlock.ErrNotHeld)
}

// extendGone: an Extend that finds the hold gone on the server (deleted
// behind the Client's back) fails with ErrNotHeld, creates nothing, and
// ends the hold as lost.
func (s *suite) extendGone(t *testing.T) {
	c, rc := s.newClient(t)
	ctx := testCtx(t)
	name := s.lockName(t)
	m := s.New(c, name)

	require.NoError(t, m.LockLease(ctx, 10*time.Second))
	g := m.Guard(ctx)
	require.NoError(t, rc.Do(ctx, rc.B().Del().Key(name).Build()).Error())
	assert.ErrorIs(t, m.Extend(ctx, 10*time.Second), interlock.ErrNotHeld)
	assert.False(t, must[bool](t)(m.IsLocked(ctx)), "the Extend created the lock")
	require.Error(t, g.Err(), "the guard outlived the hold")
	assert.ErrorIs(t, context.Cause(g), interlock.ErrLockLost)
	assert.ErrorIs(t, context.Cause(g), interlock.ErrKeyGone)
	assert.Zero(t, m.Remaining(ctx))
}
