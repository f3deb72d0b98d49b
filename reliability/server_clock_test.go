package reliability

// T13 (docs/reliability.md, hazard H8): the server's wall clock jumps two
// leases ahead in the middle of a hold. Redis keeps absolute expiry times,
// so every held key expires at once; the holder's next renewal finds it
// gone. redis-server runs under libfaketime, which moves only its wall
// clock (CLOCK_MONOTONIC is left alone) when the test rewrites its offset
// file.
//
// Each jump hits every lock on the server, so a run is one lock and each
// jump batches t13PerJump runs: a holder on one Client has entered its
// oracle section and read, a waiter on another Client waits for the same
// lock; the clock jumps; the holder's guard must end within one renewal
// interval (+ a round trip) of the jump. The holder then writes only once
// the waiter has entered, as a holder whose last check came just before
// the jump would: with fencing (fenced kind, oracle checking tokens) that
// stale write must be refused in every run and the oracle must see no
// violation; the canary (the same with the oracle's check off) must see
// overlaps, or the oracle is blind.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/interlock-go/interlock"
)

const (
	// t13PerJump is how many runs (locks) one clock jump serves.
	t13PerJump = 10
	// t13Jump is the jump: two 3 s leases.
	t13Jump = 6 * time.Second
	// t13RTT is the round trip allowed on top of the renewal interval
	// between the jump and the guard's end: the tick after the jump is sent
	// within one interval, and its answer is what ends the guard.
	t13RTT = 50 * time.Millisecond
)

// t13Outcome is one run.
type t13Outcome struct {
	lostAfter     time.Duration // jump → holder's guard done
	lost          bool
	waiterEntered bool
	staleAccepted bool // the holder's write after the jump was accepted
	err           error
}

func TestT13ServerClockJump(t *testing.T) {
	nightlyOnly(t)
	runs := 100
	const lease = 3 * time.Second
	for _, v := range []struct {
		name  string
		fence bool
	}{{"fenced", true}, {"canary", false}} {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			srv := nhStartFakeClock(t)
			oracle := startOracle(t)
			cfg := lockConfig{Addr: srv.Addr(), Kind: kindFenced, Watchdog: lease}
			rcA, holders, err := dialLocks(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer rcA.Close()
			defer holders.Close()
			rcB, waiters, err := dialLocks(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer rcB.Close()
			defer waiters.Close()
			o, err := dialOracle(oracle.Addr(), v.fence)
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()

			var outcomes []t13Outcome
			for jump := 0; jump*t13PerJump < runs; jump++ {
				batch := t13Batch(ctx, t, srv, holders, waiters, o, cfg, fmt.Sprintf("t13-%s-%d", v.name, jump))
				outcomes = append(outcomes, batch...)
			}
			verdict, err := oracle.Verdict(ctx)
			if err != nil {
				t.Fatal(err)
			}
			bound := lease/3 + t13RTT
			var inBound, entered, stale int
			var lostAfter []time.Duration
			for i, r := range outcomes {
				switch {
				case r.err != nil:
					t.Errorf("run %d: %v", i, r.err)
					continue
				case !r.lost:
					t.Errorf("run %d: the holder's guard never ended after the jump", i)
				case r.lostAfter > bound:
					t.Errorf("run %d: the holder's guard ended %v after the jump, want <= %v", i, r.lostAfter, bound)
				default:
					inBound++
				}
				lostAfter = append(lostAfter, r.lostAfter)
				if r.waiterEntered {
					entered++
				}
				if r.staleAccepted {
					stale++
				}
			}
			t.Logf("T13 %s: %d runs in %d jumps of %v (%d locks per jump), lease %v: Lost <= %v after the jump in %d/%d (%s); waiter entered %d/%d; holder's stale write accepted %d/%d; oracle: %v",
				v.name, len(outcomes), (len(outcomes)+t13PerJump-1)/t13PerJump, t13Jump, t13PerJump, lease, bound,
				inBound, len(outcomes), nhSummary(lostAfter), entered, len(outcomes), stale, len(outcomes), verdict)
			if v.fence {
				if stale != 0 || verdict.Violations() != 0 {
					t.Errorf("fenced: %d stale writes accepted, %d violations", stale, verdict.Violations())
				}
			} else if verdict.Stats.Overlaps == 0 && len(verdict.Check.Overlaps) == 0 {
				t.Errorf("canary: no overlap seen in %d runs: the oracle is blind", len(outcomes))
			}
		})
	}
}

// t13Batch runs t13PerJump runs around one clock jump and returns them.
func t13Batch(ctx context.Context, t *testing.T, srv *nhFakeClockServer, holders, waiters *interlock.Client,
	o *oracleClient, cfg lockConfig, prefix string,
) []t13Outcome {
	out := make([]t13Outcome, t13PerJump)
	var ready, wg sync.WaitGroup
	jumped := make(chan time.Time, t13PerJump)
	ready.Add(t13PerJump)
	for i := range t13PerJump {
		wg.Go(func() {
			out[i] = t13Run(ctx, holders, waiters, o, cfg, fmt.Sprintf("%s-%d", prefix, i), ready.Done, jumped)
		})
	}
	ready.Wait()
	// Let every waiter's first attempt reach the server, and the jump fall
	// anywhere in the renewal interval.
	settle := time.NewTimer(200*time.Millisecond + rand.N(cfg.lease()/3))
	<-settle.C
	if err := srv.Jump(t13Jump); err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	for range t13PerJump {
		jumped <- at
	}
	wg.Wait()
	return out
}

// t13Run is one run: holder and waiter of one lock around the jump. It
// calls ready once the holder has read and the waiter is waiting (or the
// run failed), then takes the jump's time from jumped.
func t13Run(ctx context.Context, holders, waiters *interlock.Client, o *oracleClient, cfg lockConfig,
	name string, ready func(), jumped <-chan time.Time,
) (r t13Outcome) {
	readyOnce := sync.OnceFunc(ready)
	defer readyOnce()
	took := false
	defer func() {
		if !took {
			// Still take the jump's time, so the batch does not block.
			<-jumped
		}
	}()
	hlk, err := newLocker(holders, cfg, name)
	if err != nil {
		r.err = err
		return r
	}
	hctx := interlock.WithOwner(ctx, interlock.NewOwnerID())
	h, err := acquireHold(hctx, holders, hlk, name, cfg.lease())
	if err != nil {
		r.err = fmt.Errorf("holder: %w", err)
		return r
	}
	sec := newSection(h, name)
	if ok, err := o.Enter(ctx, sec); err != nil || !ok {
		r.err = fmt.Errorf("holder enter: %v %v", ok, err)
		return r
	}
	v, err := o.Read(ctx, sec)
	if err != nil {
		r.err = err
		return r
	}

	// The waiter, on the other Client.
	wlk, err := newLocker(waiters, cfg, name)
	if err != nil {
		r.err = err
		return r
	}
	wctx, wcancel := context.WithTimeout(interlock.WithOwner(ctx, interlock.NewOwnerID()), 30*time.Second)
	defer wcancel()
	entered := make(chan struct{})
	var waiterErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		wh, err := acquireHold(wctx, waiters, wlk, name, cfg.lease())
		if err != nil {
			waiterErr = fmt.Errorf("waiter: %w", err)
			return
		}
		ws := newSection(wh, name)
		ok, err := o.Enter(ctx, ws)
		if err == nil && ok {
			close(entered)
			_, err = o.RMW(ctx, ws, 5*time.Millisecond)
			err = errors.Join(err, o.Exit(ctx, ws))
		}
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		waiterErr = errors.Join(err, wh.Unlock(uctx))
	})
	defer wg.Wait()
	readyOnce()
	jumpAt := <-jumped
	took = true

	lostBy := time.NewTimer(5 * time.Second)
	select {
	case <-h.Guard.Done():
		r.lostAfter, r.lost = time.Since(jumpAt), true
		lostBy.Stop()
	case <-lostBy.C:
	}
	// The holder's step that straddled the jump: it writes once the waiter
	// has entered (or after two leases if it never does).
	enteredBy := time.NewTimer(2 * cfg.lease())
	select {
	case <-entered:
		r.waiterEntered = true
		enteredBy.Stop()
	case <-enteredBy.C:
	}
	ok, err := o.Write(ctx, sec, v+1)
	if err != nil {
		r.err = err
		return r
	}
	r.staleAccepted = ok && r.waiterEntered
	if err := o.Exit(ctx, sec); err != nil {
		r.err = err
		return r
	}
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_ = h.Unlock(uctx) // the hold is gone: ErrNotHeld is the expected answer
	wg.Wait()
	if waiterErr != nil {
		r.err = waiterErr
	}
	return r
}
