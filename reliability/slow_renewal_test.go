package reliability

// T12 (docs/reliability.md, hazard H6): slow renewals. The proxy holds
// back every reply to a renewal script by 0.2-0.6 of the lease (the
// replies behind it on the connection wait too) while goroutines of every
// kind hold locks for one to three leases and check them all the time:
//
//   - Lost is never late: while a hold is believed valid (its guard not
//     done and Remaining() > 0), the server must still have it, and its
//     key must not expire before the end of the believed validity. A
//     sample that shows otherwise is a violation; there must be none.
//   - A Lost that fires while the key still holds the owner's field with
//     a TTL is a false Lost: allowed (the library must be pessimistic)
//     and reported as a rate.
//   - Holders that enter their critical section only while Remaining()
//     covers it never overlap.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/lua"
)

const (
	t12Lease = time.Second
	// t12Goroutines is how many holders run, two per kind on one name.
	t12Goroutines = 10
	// t12Section is the critical section; t12Budget the validity it needs.
	t12Section = 5 * time.Millisecond
	t12Budget  = 300 * time.Millisecond
	// t12Slack absorbs millisecond rounding of PTTL.
	t12Slack = 2 * time.Millisecond
)

// t12Tally is what the holders saw.
type t12Tally struct {
	holds, samples, lost, falseLost, violations, overlaps, sections atomic.Int64
	unlockOK, unlockNotHeld                                         atomic.Int64
	mu                                                              sync.Mutex
	errs                                                            netErrTally
	firstViolations                                                 []string
}

func (tl *t12Tally) fail(err error) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.errs.add(err)
}

func (tl *t12Tally) violation(msg string) {
	tl.violations.Add(1)
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if len(tl.firstViolations) < 10 {
		tl.firstViolations = append(tl.firstViolations, msg)
	}
}

func TestT12SlowRenewals(t *testing.T) {
	t.Parallel() // mostly waiting on delayed replies
	run := time.Duration(sized(10, 180)) * time.Second
	e := netStart(t, interlock.WithWatchdogTimeout(t12Lease))
	delay, jitter := 4*t12Lease/10, 2*t12Lease/10
	if err := e.proxy.DelayReplyTo(netScripts(lua.Renew(), lua.RWRenewRead()), delay, jitter); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), run)
	defer cancel()
	var tl t12Tally
	var occMu sync.Mutex
	occupant := map[string]string{} // name -> owner in its section
	var wg sync.WaitGroup
	for g := range t12Goroutines {
		k := netKinds[g%len(netKinds)]
		name := "t12:" + k.name
		lk := k.open(e.c, name)
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(g), 12))
			for ctx.Err() == nil {
				octx := interlock.WithOwner(context.Background(), interlock.NewOwnerID())
				owner, err := e.c.Owner(octx)
				if err != nil {
					tl.fail(err)
					return
				}
				field := owner + k.suffix
				lctx, lcancel := context.WithTimeout(octx, 30*time.Second)
				err = lk.Lock(lctx)
				lcancel()
				if err != nil {
					tl.fail(err)
					continue
				}
				tl.holds.Add(1)
				guard := lk.Guard(octx)
				until := time.Now().Add(t12Lease + time.Duration(rnd.Int64N(int64(2*t12Lease))))
				for time.Now().Before(until) {
					if guard.Err() != nil {
						tl.lost.Add(1)
						if t12StillHeld(e, name, field) {
							tl.falseLost.Add(1)
						}
						break
					}
					t1 := time.Now()
					r := lk.Remaining(octx)
					if r > 0 {
						tl.samples.Add(1)
						if msg := t12Check(e, name, field, t1, r); msg != "" {
							tl.violation(fmt.Sprintf("%s: %s", k.name, msg))
						}
					}
					if r >= t12Budget && k.name != "rwread" {
						occMu.Lock()
						if o, ok := occupant[name]; ok && o != owner {
							tl.overlaps.Add(1)
						}
						occupant[name] = owner
						occMu.Unlock()
						time.Sleep(t12Section)
						occMu.Lock()
						if occupant[name] == owner {
							delete(occupant, name)
						}
						occMu.Unlock()
						tl.sections.Add(1)
					}
					time.Sleep(time.Duration(10+rnd.IntN(30)) * time.Millisecond)
				}
				uctx, ucancel := context.WithTimeout(octx, 10*time.Second)
				err = lk.Unlock(uctx)
				ucancel()
				switch {
				case err == nil:
					tl.unlockOK.Add(1)
				case errors.Is(err, k.notHeld):
					tl.unlockNotHeld.Add(1)
				default:
					tl.fail(err)
				}
			}
		})
	}
	wg.Wait()
	_ = e.proxy.DelayReplyTo(nil, 0, 0)
	holds := tl.holds.Load()
	rate := 0.0
	if holds > 0 {
		rate = float64(tl.falseLost.Load()) / float64(holds)
	}
	t.Logf("T12: %v with renew replies delayed %v ± %v (lease %v): %d holds, %d validity samples, %d violations, %d Lost (%d false: %.1f%% of holds), %d sections, %d overlaps, unlocks %d ok %d not held; errors: %v",
		run, delay, jitter, t12Lease, holds, tl.samples.Load(), tl.violations.Load(), tl.lost.Load(), tl.falseLost.Load(), 100*rate,
		tl.sections.Load(), tl.overlaps.Load(), tl.unlockOK.Load(), tl.unlockNotHeld.Load(), &tl.errs)
	for _, v := range tl.firstViolations {
		t.Errorf("violation: %s", v)
	}
	if tl.overlaps.Load() > 0 {
		t.Errorf("%d overlapping critical sections", tl.overlaps.Load())
	}
	if len(tl.errs.order) > 0 {
		t.Errorf("errors: %v", &tl.errs)
	}
	if holds == 0 {
		t.Error("no hold was taken")
	}
}

// t12Check compares a belief (at t1 the hold had r of validity left) with
// the server: the field must exist, and the key must not expire before
// t1 + r. It returns what was wrong, or "".
func t12Check(e *netEnv, name, field string, t1 time.Time, r time.Duration) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res := e.direct.DoMulti(ctx,
		e.direct.B().Hexists().Key(name).Field(field).Build(),
		e.direct.B().Pttl().Key(name).Build())
	t2 := time.Now()
	held, err1 := res[0].AsBool()
	pttl, err2 := res[1].AsInt64()
	if err := errors.Join(err1, err2); err != nil {
		return "checking the server: " + err.Error()
	}
	believed := t1.Add(r)
	switch {
	case !held && t2.Add(t12Slack).Before(believed):
		return fmt.Sprintf("field gone %v before the believed end of validity", believed.Sub(t2).Round(time.Millisecond))
	case held && pttl >= 0 && t2.Add(time.Duration(pttl)*time.Millisecond+t12Slack).Before(believed):
		return fmt.Sprintf("key expires in %dms, %v before the believed end of validity", pttl,
			believed.Sub(t2.Add(time.Duration(pttl)*time.Millisecond)).Round(time.Millisecond))
	}
	return ""
}

// t12StillHeld reports whether name still holds field with a TTL left.
func t12StillHeld(e *netEnv, name, field string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res := e.direct.DoMulti(ctx,
		e.direct.B().Hexists().Key(name).Field(field).Build(),
		e.direct.B().Pttl().Key(name).Build())
	held, _ := res[0].AsBool()
	pttl, _ := res[1].AsInt64()
	return held && pttl > 0
}
