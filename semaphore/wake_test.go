package semaphore_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/script"
	"github.com/interlock-go/interlock/semaphore"
)

// A release of n permits wakes n of the Client's parked waiters, not all
// of them: no thundering herd.
func TestSemaphoreReleaseWakesN(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out several leases or repolls; the server matrix runs with -short")
	}
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, cnt := counted(t, tg)
		name := semName(t)
		s := semaphore.New(c, name)
		acq := script.SemAcquire()
		require.True(t, redistest.Must[bool](t)(s.TrySetPermits(ctx, 0)))

		const waiters = 8
		var got atomic.Int64
		wctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for range waiters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := s.Acquire(wctx, 1); err == nil {
					got.Add(1)
				}
			}()
		}
		defer func() { cancel(); wg.Wait() }()
		// Every waiter is parked once the attempts stop; each repolls
		// every 2s, all at about the same time since they joined the
		// first one's wait. Release right after such a round of repolls,
		// so that the next one is ~2s away.
		require.Eventually(t, func() bool { return c.Stats().Channels == 1 }, redistest.Prompt, time.Millisecond)
		parked := cnt.settle(t, acq, redistest.Quiet)
		t.Logf("%d attempts to park %d waiters", parked, waiters)
		afterRepoll := func() int64 {
			t.Helper()
			base := cnt.n(acq)
			require.Eventually(t, func() bool { return cnt.n(acq) >= base+int64(waiters)-got.Load() }, 3*time.Second, 5*time.Millisecond, "a repoll")
			return cnt.settle(t, acq, 100*time.Millisecond)
		}

		for _, n := range []int{1, 3} {
			held := got.Load()
			base := afterRepoll()
			start := time.Now()
			require.NoError(t, s.Release(ctx, n))
			require.Eventually(t, func() bool { return got.Load() == held+int64(n) }, redistest.Prompt, time.Millisecond, "%d woken", n)
			took := time.Since(start)
			time.Sleep(redistest.Quiet) // a herd shows up here
			tries := cnt.n(acq) - base
			t.Logf("Release(%d): %d acquired after %v, %d attempts", n, got.Load()-held, took, tries)
			assert.Less(t, took, redistest.Slack)
			assert.Equal(t, held+int64(n), got.Load(), "exactly %d acquisitions", n)
			assert.GreaterOrEqual(t, tries, int64(n))
			assert.LessOrEqual(t, tries, int64(n)+2, "attempts after Release(%d)", n)
			assert.EqualValues(t, 0, redistest.Must[int64](t)(s.Available(ctx)))
		}

		require.NoError(t, s.Release(ctx, waiters-4))
		require.Eventually(t, func() bool { return got.Load() == waiters }, redistest.Prompt, time.Millisecond, "every waiter served")
	})
}

// Many goroutines of one Client share few permits: never more holders
// than permits, and few wasted attempts per acquisition.
func TestSemaphoreContention(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, cnt := counted(t, tg)
		name := semName(t)
		s := semaphore.New(c, name)
		const (
			permits    = 8
			goroutines = 64
			total      = 2000
		)
		require.True(t, redistest.Must[bool](t)(s.TrySetPermits(ctx, permits)))

		var (
			taken, holders, peak atomic.Int64
			wg                   sync.WaitGroup
			errs                 = make(chan error, goroutines)
		)
		start := time.Now()
		for range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for taken.Add(1) <= total {
					if err := s.Acquire(ctx, 1); err != nil {
						errs <- err
						return
					}
					h := holders.Add(1)
					for p := peak.Load(); h > p && !peak.CompareAndSwap(p, h); p = peak.Load() {
					}
					time.Sleep(time.Millisecond) // hold it: the others queue
					holders.Add(-1)
					if err := s.Release(ctx, 1); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		took := time.Since(start)
		tries := cnt.n(script.SemAcquire())
		per := float64(tries) / total
		t.Logf("%d acquisitions by %d goroutines on %d permits in %v: %d attempts, %.2f per acquisition, peak %d holders",
			total, goroutines, permits, took, tries, per, peak.Load())
		assert.LessOrEqual(t, peak.Load(), int64(permits), "more holders than permits")
		assert.LessOrEqual(t, per, 3.0, "attempts per acquisition")
		assert.EqualValues(t, permits, redistest.Must[int64](t)(s.Available(ctx)))
	})
}

// A waiter for more permits than a release announced hands the wake-up
// on to the next waiter of the Client, which may need fewer: the release
// is not lost until the 2s repoll.
func TestSemaphoreWakeUpHandedOn(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, cnt := counted(t, tg)
		name := semName(t)
		s := semaphore.New(c, name)
		acq := script.SemAcquire()
		require.True(t, redistest.Must[bool](t)(s.TrySetPermits(ctx, 0)))

		big, small := make(chan error, 1), make(chan error, 1)
		go func() { big <- s.Acquire(ctx, 2) }()
		require.Eventually(t, func() bool { return cnt.n(acq) == 2 }, redistest.Prompt, time.Millisecond, "Acquire(2) parked")
		time.Sleep(50 * time.Millisecond)
		go func() { small <- s.Acquire(ctx, 1) }()
		time.Sleep(redistest.Quiet) // parked behind it

		start := time.Now()
		require.NoError(t, s.Release(ctx, 1))
		select {
		case err := <-small:
			require.NoError(t, err)
			t.Logf("Acquire(1) served %v after the release", time.Since(start))
			assert.Less(t, time.Since(start), redistest.Slack, "woken by the message, not the repoll")
		case err := <-big:
			t.Fatalf("Acquire(2) returned with 1 free: %v", err)
		case <-time.After(redistest.Prompt):
			t.Fatal("Acquire(1) not served")
		}
		start = time.Now()
		require.NoError(t, s.Release(ctx, 2))
		select {
		case err := <-big:
			require.NoError(t, err)
			assert.Less(t, time.Since(start), redistest.Slack)
		case <-time.After(redistest.Prompt):
			t.Fatal("Acquire(2) not served")
		}
		assert.EqualValues(t, 0, redistest.Must[int64](t)(s.Available(ctx)))
	})
}

// The same for the expirable semaphore.
func TestExpirableWakeUpHandedOn(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, cnt := counted(t, tg)
		name := semName(t)
		e := semaphore.NewExpirable(c, name)
		acq := script.PESAcquire()
		require.True(t, redistest.Must[bool](t)(e.TrySetPermits(ctx, 1)))
		held := redistest.Must[[]semaphore.PermitID](t)(e.Acquire(ctx, 1, time.Minute))
		base := cnt.n(acq)

		big, small := make(chan error, 1), make(chan error, 1)
		go func() { big <- second(e.Acquire(ctx, 2, time.Minute)) }()
		require.Eventually(t, func() bool { return cnt.n(acq) == base+2 }, redistest.Prompt, time.Millisecond, "Acquire(2) parked")
		time.Sleep(50 * time.Millisecond)
		go func() { small <- second(e.Acquire(ctx, 1, time.Minute)) }()
		time.Sleep(redistest.Quiet)

		start := time.Now()
		require.NoError(t, e.Release(ctx, held...))
		select {
		case err := <-small:
			require.NoError(t, err)
			t.Logf("Acquire(1) served %v after the release", time.Since(start))
			assert.Less(t, time.Since(start), redistest.Slack, "woken by the message, not the repoll")
		case err := <-big:
			t.Fatalf("Acquire(2) returned with 1 free: %v", err)
		case <-time.After(redistest.Prompt):
			t.Fatal("Acquire(1) not served")
		}
		require.NoError(t, e.AddPermits(ctx, 2))
		select {
		case err := <-big:
			require.NoError(t, err)
		case <-time.After(redistest.Prompt):
			t.Fatal("Acquire(2) not served")
		}
	})
}

// Closing the Client ends its waiters with ErrClosed, at once.
func TestSemaphoresCloseEndsWaiters(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, rc := tg.Client(t)
		name := semName(t)
		s := semaphore.New(c, name)
		e := semaphore.NewExpirable(c, name+":expirable")
		require.True(t, redistest.Must[bool](t)(s.TrySetPermits(ctx, 0)))
		require.True(t, redistest.Must[bool](t)(e.TrySetPermits(ctx, 0)))
		errs := make(chan error, 3)
		go func() { errs <- s.Acquire(ctx, 1) }()
		go func() { errs <- second(s.TryAcquire(ctx, 1, time.Minute)) }()
		go func() { errs <- second(e.Acquire(ctx, 1, 0)) }()
		require.Eventually(t, func() bool { return c.Stats().Channels == 2 }, redistest.Prompt, time.Millisecond)
		time.Sleep(redistest.Quiet)
		start := time.Now()
		require.NoError(t, c.Close())
		for range 3 {
			select {
			case err := <-errs:
				assert.ErrorIs(t, err, interlock.ErrClosed)
			case <-time.After(redistest.Prompt):
				t.Fatal("a waiter outlived Close")
			}
		}
		assert.Less(t, time.Since(start), redistest.Slack)
		assert.EqualValues(t, "string:0", state(t, rc, name), "nothing taken")
		assert.Empty(t, members(t, rc, name+":expirable"))
	})
}
