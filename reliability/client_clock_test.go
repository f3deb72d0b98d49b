package reliability

// T14 (docs/reliability.md, hazard H8): clients whose wall clocks are
// wrong. libfaketime cannot move a Go process's clock, so the Clients get
// a skewed wall clock injected (runtime.SetWallClock); their monotonic
// clock is the real one. Four parts, run at once:
//
//   - trylock: a Client an hour ahead or behind calls TryLock(2 s) on a
//     lock held elsewhere, reentrant and fair: it must return (false) in
//     2 s ± 50 ms; and Lock with a 2 s context must return by it + 100 ms.
//   - lease: the same Clients take locks: the server's PTTL and Remaining
//     must be the lease, before and after renewals, whatever their clock.
//   - fair-skew: fair-lock waiters on two Clients 10 s ahead and 10 s
//     behind (wait timeout 5 s) queue for one lock; the one ahead drops the
//     one behind from the queue as stale (#3004). Every waiter must acquire
//     or fail by its context, never later than its deadline + 100 ms.
//   - guard: the same two Clients with the skew guard on
//     (interlock.WithClockSkewLimit, a quarter of the wait timeout) must be
//     refused before they queue (ErrClockSkew), and leave the queue empty;
//     a Client with a right clock and the same guard queues normally.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/runtime"
	"github.com/interlock-go/interlock/rlock"
)

const (
	t14Lease     = 3 * time.Second
	t14Wait      = 2 * time.Second // TryLock's wait and Lock's context
	t14Tolerance = 50 * time.Millisecond
	t14CtxSlack  = 100 * time.Millisecond
	t14FairWait  = 5 * time.Second // threadWaitTime of the fair-skew part
)

// t14Clock returns a wall clock off by d.
func t14Clock(d time.Duration) func() time.Time {
	return func() time.Time { return time.Now().Add(d) }
}

// t14Client returns a Client on srv with the wall clock off by skew.
func t14Client(t *testing.T, srv *redistest.Server, skew time.Duration, opts ...interlock.Option) *interlock.Client {
	t.Helper()
	opts = append([]interlock.Option{interlock.WithWatchdogTimeout(t14Lease)}, opts...)
	c, err := interlock.New(srv.Client(t), opts...)
	if err != nil {
		t.Fatal(err)
	}
	runtime.Of(c).SetWallClock(t14Clock(skew))
	t.Cleanup(func() { c.Close() })
	return c
}

// t14Lock is the part of rlock.Mutex and fairlock.Mutex T14 uses.
type t14Lock interface {
	Lock(ctx context.Context) error
	TryLock(ctx context.Context, wait, lease time.Duration) (bool, error)
	Unlock(ctx context.Context) error
	Remaining(ctx context.Context) time.Duration
}

func t14New(c *interlock.Client, fair bool, name string) t14Lock {
	if fair {
		return fairlock.New(c, name, fairlock.WithWaitTimeout(t14FairWait))
	}
	return rlock.New(c, name)
}

func TestT14ClientClock(t *testing.T) {
	nightlyOnly(t)
	srv := redistest.Standalone(t)
	rc := srv.Client(t)
	honest := t14Client(t, srv, 0)
	skews := []time.Duration{time.Hour, -time.Hour}
	kinds := []bool{false, true} // fair?
	kindName := func(fair bool) string {
		if fair {
			return "fairlock"
		}
		return "rlock"
	}

	t.Run("trylock", func(t *testing.T) {
		t.Parallel()
		for _, skew := range skews {
			c := t14Client(t, srv, skew)
			for _, fair := range kinds {
				t.Run(fmt.Sprintf("%s/%v", kindName(fair), skew), func(t *testing.T) {
					t.Parallel()
					name := fmt.Sprintf("t14-try-%s-%v", kindName(fair), skew)
					ctx := context.Background()
					hctx := interlock.WithOwner(ctx, interlock.NewOwnerID())
					holder := t14New(honest, fair, name)
					if err := holder.Lock(hctx); err != nil {
						t.Fatal(err)
					}
					defer holder.Unlock(hctx)
					m := t14New(c, fair, name)
					wctx := interlock.WithOwner(ctx, interlock.NewOwnerID())
					start := time.Now()
					ok, err := m.TryLock(wctx, t14Wait, 0)
					took := time.Since(start)
					if ok || err != nil {
						t.Errorf("TryLock = %v, %v; want false, nil", ok, err)
					}
					if d := took - t14Wait; d < -t14Tolerance || d > t14Tolerance {
						t.Errorf("TryLock(%v) returned after %v, want %v ± %v", t14Wait, took, t14Wait, t14Tolerance)
					}
					lctx, cancel := context.WithTimeout(wctx, t14Wait)
					defer cancel()
					deadline, _ := lctx.Deadline()
					err = m.Lock(lctx)
					late := time.Since(deadline)
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("Lock with a %v context: %v, want DeadlineExceeded", t14Wait, err)
					}
					if late > t14CtxSlack {
						t.Errorf("Lock returned %v after its context's deadline, want <= %v", late, t14CtxSlack)
					}
					t.Logf("T14 trylock %s clock %+v: TryLock(%v) returned after %v; Lock(ctx %v) returned %v after the deadline",
						kindName(fair), skew, t14Wait, took.Round(time.Millisecond), t14Wait, late.Round(time.Millisecond))
				})
			}
		}
	})

	t.Run("lease", func(t *testing.T) {
		t.Parallel()
		for _, skew := range skews {
			c := t14Client(t, srv, skew)
			for _, fair := range kinds {
				t.Run(fmt.Sprintf("%s/%v", kindName(fair), skew), func(t *testing.T) {
					t.Parallel()
					t14CheckLease(t, rc, c, fair, fmt.Sprintf("t14-lease-%s-%v", kindName(fair), skew))
				})
			}
		}
	})

	t.Run("fair-skew", func(t *testing.T) {
		t.Parallel()
		ahead, behind := t14Client(t, srv, 10*time.Second), t14Client(t, srv, -10*time.Second)
		// The first waiter is behind: its deadline, the anchor of the
		// queue's, is already past by the clock of the one ahead.
		t14FairSkew(t, honest, []*interlock.Client{behind, ahead}, "t14-fair-skew")
	})

	t.Run("guard", func(t *testing.T) {
		t.Parallel()
		limit := interlock.WithClockSkewLimit(t14FairWait / 4)
		name := "t14-guard"
		ctx := context.Background()
		hctx := interlock.WithOwner(ctx, interlock.NewOwnerID())
		holder := t14New(honest, true, name)
		if err := holder.Lock(hctx); err != nil {
			t.Fatal(err)
		}
		defer holder.Unlock(hctx)
		for _, skew := range []time.Duration{10 * time.Second, -10 * time.Second, time.Hour, -time.Hour} {
			c := t14Client(t, srv, skew, limit)
			lctx, cancel := context.WithTimeout(interlock.WithOwner(ctx, interlock.NewOwnerID()), t14Wait)
			start := time.Now()
			err := t14New(c, true, name).Lock(lctx)
			cancel()
			if !errors.Is(err, interlock.ErrClockSkew) {
				t.Errorf("clock %+v: fair Lock = %v, want ErrClockSkew", skew, err)
			}
			qlen, qerr := rc.Do(ctx, rc.B().Llen().Key("redisson_lock_queue:{"+name+"}").Build()).AsInt64()
			if qerr != nil || qlen != 0 {
				t.Errorf("clock %+v: queue length %d (%v) after the refusal, want 0", skew, qlen, qerr)
			}
			t.Logf("T14 guard clock %+v: fair Lock refused after %v: %v", skew, time.Since(start).Round(time.Millisecond), err)
		}
		// A right clock with the same guard queues and times out normally.
		c := t14Client(t, srv, 0, limit)
		ok, err := t14New(c, true, name).TryLock(interlock.WithOwner(ctx, interlock.NewOwnerID()), 200*time.Millisecond, 0)
		if ok || err != nil {
			t.Errorf("right clock with the guard: TryLock = %v, %v; want false, nil", ok, err)
		}
	})
}

// t14CheckLease checks that a Client with a skewed wall clock gives its holds
// the real lease, on the server and in Remaining, through renewals.
func t14CheckLease(t *testing.T, rc rueidis.Client, c *interlock.Client, fair bool, name string) {
	ctx := interlock.WithOwner(context.Background(), interlock.NewOwnerID())
	m := t14New(c, fair, name)
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Unlock(ctx)
	check := func(when string) {
		pttl, err := rc.Do(ctx, rc.B().Pttl().Key(name).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		ttl := time.Duration(pttl) * time.Millisecond
		rem := m.Remaining(ctx)
		// Renewed at most one interval ago, and a tick may be late.
		low := t14Lease - t14Lease/3 - 200*time.Millisecond
		if ttl < low || ttl > t14Lease {
			t.Errorf("%s: PTTL %v, want within [%v, %v]", when, ttl, low, t14Lease)
		}
		if rem < low || rem > t14Lease {
			t.Errorf("%s: Remaining %v, want within [%v, %v]", when, rem, low, t14Lease)
		}
		t.Logf("T14 lease %s: %s: PTTL %v, Remaining %v", name, when, ttl, rem.Round(time.Millisecond))
	}
	check("after Lock")
	later := time.NewTimer(2 * t14Lease)
	<-later.C
	check("after two leases of renewals")
}

// t14FairSkew: waiters alternate between the skewed Clients (-10 s, +10 s), queued 50 ms
// apart behind a holder on the honest Client that keeps the lock 1 s; each
// waiter holds 100 ms once it has the lock. Every waiter's context ends
// t14FairWait + 3 s after it started.
func t14FairSkew(t *testing.T, honest *interlock.Client, skewed []*interlock.Client, name string) {
	const waiters = 8
	ctx := context.Background()
	hctx := interlock.WithOwner(ctx, interlock.NewOwnerID())
	holder := fairlock.New(honest, name, fairlock.WithWaitTimeout(t14FairWait))
	if err := holder.Lock(hctx); err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		err  error
		late time.Duration // return − deadline (negative: before)
		turn int           // order of acquisition, from 1
	}
	var turns sync.Mutex
	turn := 0
	out := make([]outcome, waiters)
	var wg sync.WaitGroup
	for i := range waiters {
		wg.Go(func() {
			c := skewed[i%len(skewed)]
			m := fairlock.New(c, name, fairlock.WithWaitTimeout(t14FairWait))
			wctx, cancel := context.WithTimeout(interlock.WithOwner(ctx, interlock.NewOwnerID()), t14FairWait+3*time.Second)
			defer cancel()
			deadline, _ := wctx.Deadline()
			err := m.Lock(wctx)
			out[i] = outcome{err: err, late: time.Since(deadline)}
			if err == nil {
				turns.Lock()
				turn++
				out[i].turn = turn
				turns.Unlock()
				hold := time.NewTimer(100 * time.Millisecond)
				<-hold.C
				if uerr := m.Unlock(wctx); uerr != nil {
					out[i].err = fmt.Errorf("unlock: %w", uerr)
				}
			}
		})
		pace := time.NewTimer(50 * time.Millisecond)
		<-pace.C
	}
	release := time.NewTimer(time.Second)
	<-release.C
	if err := holder.Unlock(hctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	acquired, timedOut, inversions, lastTurn := 0, 0, 0, 0
	var worst time.Duration
	for i, o := range out {
		switch {
		case o.err == nil:
			acquired++
			if o.turn < lastTurn {
				inversions++
			}
			lastTurn = o.turn
		case errors.Is(o.err, context.DeadlineExceeded):
			timedOut++
			worst = max(worst, o.late)
			if o.late > t14CtxSlack {
				t.Errorf("waiter %d (clock %+v) returned %v after its deadline, want <= %v", i,
					[]time.Duration{-10 * time.Second, 10 * time.Second}[i%2], o.late, t14CtxSlack)
			}
		default:
			t.Errorf("waiter %d: %v", i, o.err)
		}
	}
	t.Logf("T14 fair-skew: %d waiters on clocks +10s and -10s (wait timeout %v): %d acquired (%d out of queue order: dropped as stale and queued again), %d failed by their context (latest %v after its deadline)",
		waiters, t14FairWait, acquired, inversions, timedOut, worst.Round(time.Millisecond))
}
