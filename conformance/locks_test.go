package conformance_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
)

// Contracts of the mutexes, which more than one kind's package tested in
// near-identical tests: each runs here once per kind, on the package's
// server. The read/write lock's halves keep tests of their own, which
// check the lock's modes.

// mutexes are the kinds with a hash of owner to hold count, each hold
// excluding every other owner.
var mutexes = []Kind{rlockKind, fairKind, fencedKind, spinKind, nonReentrantKind, nonReentrantFairKind}

// eachKind runs f for each of kinds, in a subtest named after the kind, on
// the package's server.
func eachKind(t *testing.T, kinds []Kind, f func(t *testing.T, s *suite)) {
	for _, k := range kinds {
		k.Addr = addr
		t.Run(string(k.Name), func(t *testing.T) { f(t, &suite{Kind: k}) })
	}
}

// TestLockUnlockLeavesNothing: a watchdog hold is one field of the lock's
// hash, the owner's with a count of 1, with the watchdog timeout as its
// TTL and no other key; its unlock leaves nothing.
func TestLockUnlockLeavesNothing(t *testing.T) {
	eachKind(t, mutexes, func(t *testing.T, s *suite) {
		c, rc := s.newClient(t)
		ctx := testCtx(t)
		name := s.lockName(t)
		m := s.New(c, name)
		assert.Equal(t, name, m.Name())

		require.NoError(t, m.Lock(ctx))
		assert.True(t, must[bool](t)(m.IsLocked(ctx)))
		assert.True(t, must[bool](t)(m.IsHeld(ctx)))
		assert.InDelta(t, float64(interlock.DefaultWatchdogTimeout), float64(must[time.Duration](t)(m.TTL(ctx))), float64(2*time.Second))
		owner := must[string](t)(c.Owner(ctx))
		fields, err := rc.Do(ctx, rc.B().Hgetall().Key(name).Build()).AsStrMap()
		require.NoError(t, err)
		assert.Equal(t, map[string]string{owner: "1"}, fields)
		assert.Equal(t, []string{name}, s.keys(t, rc, name, false), "an uncontended lock queues nothing")

		require.NoError(t, m.Unlock(ctx))
		assert.False(t, must[bool](t)(m.IsLocked(ctx)))
		// The latch is deleted in the background, right after the unlock.
		s.nothingLeft(t, c, rc, name)
		assert.ErrorIs(t, m.Unlock(ctx), interlock.ErrNotHeld)
		assert.Zero(t, must[time.Duration](t)(m.TTL(ctx)))
	})
}

// TestGoroutineIsTheDefaultOwner: without an explicit owner, another
// goroutine is another owner, which neither acquires nor releases the
// hold.
func TestGoroutineIsTheDefaultOwner(t *testing.T) {
	eachKind(t, mutexes, func(t *testing.T, s *suite) {
		c, _ := s.newClient(t)
		ctx := testCtx(t)
		m := s.New(c, s.lockName(t))
		require.NoError(t, m.Lock(ctx))

		var wg sync.WaitGroup
		wg.Go(func() {
			ok, err := m.TryLock(ctx, 0, 0)
			assert.NoError(t, err)
			assert.False(t, ok, "another goroutine is another owner")
			assert.ErrorIs(t, m.Unlock(ctx), interlock.ErrNotHeld)
		})
		wg.Wait()
		require.NoError(t, m.Unlock(ctx))
	})
}

// TestExplicitOwnerCrossesGoroutines: a hold taken for an explicit owner
// is released from another goroutine carrying that owner, and not from one
// without it.
func TestExplicitOwnerCrossesGoroutines(t *testing.T) {
	eachKind(t, append(mutexes, readKind, writeKind), func(t *testing.T, s *suite) {
		c, _ := s.newClient(t)
		ctx := interlock.WithOwner(testCtx(t), 7)
		m := s.New(c, s.lockName(t))
		require.NoError(t, m.Lock(ctx))

		var wg sync.WaitGroup
		wg.Go(func() {
			assert.ErrorIs(t, m.Unlock(context.Background()), interlock.ErrNotHeld, "a goroutine without the owner")
			assert.NoError(t, m.Unlock(ctx), "a goroutine carrying the owner")
		})
		wg.Wait()
		assert.False(t, must[bool](t)(m.IsLocked(ctx)))
	})
}

// TestForceUnlockWakesWaitersAndLosesHolds: ForceUnlock ends the holder's
// guard with ErrLockLost and wakes a waiter at once (by its message, or
// for a spin lock by its next poll), not at the holder's 30s TTL; it
// reports whether there was anything to delete.
func TestForceUnlockWakesWaitersAndLosesHolds(t *testing.T) {
	eachKind(t, mutexes, func(t *testing.T, s *suite) {
		c, rc := s.newClient(t)
		ctx := testCtx(t)
		name := s.lockName(t)
		m := s.New(c, name)
		holder := other(ctx)
		for range s.depth() {
			require.NoError(t, m.Lock(holder))
		}
		guard := m.Guard(holder)
		held := s.state(t, rc, name)

		acquired := make(chan time.Time, 1)
		go func() {
			assert.NoError(t, m.Lock(ctx))
			acquired <- time.Now()
		}()
		if s.Polls {
			time.Sleep(200 * time.Millisecond) // the waiter is between two attempts
		} else {
			require.Eventually(t, func() bool { return c.Stats().Channels == 1 }, 2*time.Second, 5*time.Millisecond, "waiter not subscribed")
		}
		if s.Fair {
			require.Eventually(t, func() bool {
				return !assert.ObjectsAreEqual(held, s.state(t, rc, name))
			}, 5*time.Second, 5*time.Millisecond, "the waiter did not queue")
		}
		forced := time.Now()
		ok, err := s.New(c, name).ForceUnlock(ctx)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.ErrorIs(t, context.Cause(guard), interlock.ErrLockLost)
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
		s.nothingLeft(t, c, rc, name)
	})
}

// TestCancelWhileWaitingLeavesNothing: a waiter whose context ends, in Lock
// or in a TryLock with a longer wait, returns the context's error and
// leaves no subscription, queue entry or key behind.
func TestCancelWhileWaitingLeavesNothing(t *testing.T) {
	eachKind(t, mutexes, func(t *testing.T, s *suite) {
		c, rc := s.newClient(t)
		ctx := testCtx(t)
		name := s.lockName(t)
		m := s.New(c, name)
		holder := other(ctx)
		require.NoError(t, m.Lock(holder))

		wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		assert.ErrorIs(t, m.Lock(wctx), context.DeadlineExceeded)
		ok, err := m.TryLock(wctx, time.Second, 0)
		assert.False(t, ok)
		assert.ErrorIs(t, err, context.DeadlineExceeded)

		require.NoError(t, m.Unlock(holder))
		s.nothingLeft(t, c, rc, name)
	})
}
