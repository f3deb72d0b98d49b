package reliability

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/interlock-go/interlock/internal/redistest"
)

// TestT11Pause is T11, a GC pause: the holder's process is frozen with
// SIGSTOP between the read and the write of its critical section, for two
// leases, then resumed with SIGCONT. In every run the other process must
// acquire during the pause, and the resumed holder's first check must find
// its hold invalid.
//
// With fencing (the fenced kind, "fenced"), the resumed holder's write
// must be refused in every run, with no stale write accepted and no
// violation at all. Without it (the other kinds, which have no token, and
// "fenced-canary", the fenced kind with the oracle's check off), the same
// pause must show a violation (overlap, lost update or stale accept) in at
// least 95 % of runs, or the oracle is blind.
func TestT11Pause(t *testing.T) {
	runs := sized(10, 200)
	lease := time.Duration(sized(1, 3)) * time.Second
	type variant struct {
		name  string
		kind  lockKind
		fence bool
	}
	variants := []variant{
		{string(kindRLock), kindRLock, false},
		{string(kindFair), kindFair, false},
		{string(kindWrite), kindWrite, false},
		{string(kindFenced), kindFenced, true},
		{string(kindFenced) + "-canary", kindFenced, false},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Standalone(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(runs)*(2*lease+30*time.Second))
			defer cancel()
			// The runs are spread over pauseLanes independent pairs of
			// processes, each with its own oracle, that run at once: a
			// run is mostly a frozen process and a timer.
			lanes := make([]*pauseLane, sized(pauseLanes, pauseLanesNightly))
			for i := range lanes {
				oracle := startOracle(t)
				cfg := lockerConfig{
					Lock:       lockConfig{Addr: srv.Addr(), Kind: v.kind, Watchdog: lease, FairWait: 2 * time.Second},
					OracleAddr: oracle.Addr(),
					Fence:      v.fence,
				}
				lanes[i] = &pauseLane{oracle: oracle, a: startLocker(ctx, t, cfg), b: startLocker(ctx, t, cfg)}
			}
			var wg sync.WaitGroup
			for i, l := range lanes {
				wg.Go(func() {
					for run := i; run < runs; run += len(lanes) {
						if err := l.run(ctx, t, run, fmt.Sprintf("t11-%s-%d", v.name, run), 2*lease, v.fence); err != nil {
							t.Errorf("run %d: %v", run, err)
							return
						}
					}
				})
			}
			wg.Wait()
			var sum pauseTally
			for _, l := range lanes {
				sum.add(l.tally)
			}
			t.Logf("T11 %s: %d runs, lease %v, pause %v: waiter acquired during the pause %d/%d, first check invalid %d/%d (guard already done %d), stale write rejected %d/%d, runs with violations %d/%d",
				v.name, sum.runs, lease, 2*lease, sum.during, sum.runs, sum.invalid, sum.runs, sum.guardDone,
				sum.rejected, sum.runs, sum.violated, sum.runs)
			if sum.runs != runs {
				t.Errorf("%d of %d runs completed", sum.runs, runs)
			}
			if !v.fence && sum.violated*100 < runs*95 {
				t.Errorf("canary: violations in %d of %d runs, want >= 95%%: the oracle is blind", sum.violated, runs)
			}
		})
	}
}

// pauseLanes (pauseLanesNightly in the nightly tier) is how many pairs of
// processes a T11 variant runs at once.
const pauseLanes, pauseLanesNightly = 2, 6

// pauseLane is a pair of locker processes and their oracle; the two take
// turns as holder and waiter.
type pauseLane struct {
	oracle *Oracle
	a, b   *workerProc
	tally  pauseTally
}

// pauseTally counts T11 outcomes.
type pauseTally struct {
	runs, during, violated, rejected, invalid, guardDone int
}

func (p *pauseTally) add(o pauseTally) {
	p.runs += o.runs
	p.during += o.during
	p.violated += o.violated
	p.rejected += o.rejected
	p.invalid += o.invalid
	p.guardDone += o.guardDone
}

// run is one T11 run on the lane, checked against the acceptance; it
// returns an error only when the run could not be carried out.
func (l *pauseLane) run(ctx context.Context, t *testing.T, run int, name string, pause time.Duration, fence bool) error {
	if err := l.oracle.Reset(ctx); err != nil {
		return err
	}
	holder, waiter := l.a, l.b
	if run/pauseLanes%2 == 1 {
		holder, waiter = l.b, l.a
	}
	r, err := pauseRun(ctx, holder, waiter, name, pause)
	if err != nil {
		return err
	}
	verdict, err := l.oracle.Verdict(ctx)
	if err != nil {
		return err
	}
	l.tally.runs++
	if r.acquiredDuring {
		l.tally.during++
	} else {
		t.Errorf("run %d: the waiter acquired at %v, not during the pause [%v, %v]", run,
			time.Duration(r.waiterT), time.Duration(r.stopT), time.Duration(r.contT))
	}
	if r.check.Valid {
		t.Errorf("run %d: the resumed holder's first check found its hold valid: %+v", run, r.check)
	} else {
		l.tally.invalid++
	}
	if r.check.GuardDone {
		l.tally.guardDone++
	}
	if !r.wrote.OK {
		l.tally.rejected++
	}
	if verdict.Violations() > 0 {
		l.tally.violated++
	}
	if fence {
		if r.wrote.OK {
			t.Errorf("run %d: the resumed holder's stale write was accepted", run)
		}
		if verdict.Violations() != 0 {
			t.Errorf("run %d: fenced run with violations: %v", run, verdict)
		}
	}
	return nil
}

// pauseOutcome is one T11 run as the processes reported it.
type pauseOutcome struct {
	stopT, contT, waiterT int64 // monoNow of SIGSTOP, SIGCONT, the waiter's acquisition
	acquiredDuring        bool
	wrote                 stepMsg  // the resumed holder's write
	check                 checkMsg // its first check after the write
}

// pauseRun: holder takes name and starts a section; waiter waits for
// name; once holder has read, it is stopped for pause and resumed; then
// both finish their sections and release.
func pauseRun(ctx context.Context, holder, waiter *workerProc, name string, pause time.Duration) (pauseOutcome, error) {
	var out pauseOutcome
	// The holder sleeps 500 ms between read and write: the stop lands in
	// that sleep, so the write is the first thing it does after resuming.
	if err := holder.SendJSON("lock", lockCmd{Name: name, Section: true, Pause: 500 * time.Millisecond, Release: true}); err != nil {
		return out, err
	}
	if _, err := holder.Expect(ctx, "acquired"); err != nil {
		return out, err
	}
	if err := waiter.SendJSON("lock", lockCmd{Name: name, Section: true, Pause: 5 * time.Millisecond, Release: true}); err != nil {
		return out, err
	}
	if _, err := holder.Expect(ctx, "read"); err != nil {
		return out, err
	}
	if err := holder.Stop(); err != nil {
		return out, err
	}
	out.stopT = monoNow()
	frozen := time.NewTimer(pause)
	<-frozen.C
	out.contT = monoNow()
	if err := holder.Cont(); err != nil {
		return out, err
	}
	if err := holder.ExpectJSON(ctx, "wrote", &out.wrote); err != nil {
		return out, err
	}
	if out.wrote.T < out.contT {
		return out, fmt.Errorf("the holder wrote %v before it was resumed: the stop came too late",
			time.Duration(out.contT-out.wrote.T))
	}
	if err := holder.ExpectJSON(ctx, "checked", &out.check); err != nil {
		return out, err
	}
	if _, err := holder.Expect(ctx, "released"); err != nil {
		return out, err
	}
	var got holdMsg
	if err := waiter.ExpectJSON(ctx, "acquired", &got); err != nil {
		return out, err
	}
	out.waiterT = got.T
	out.acquiredDuring = got.T > out.stopT && got.T < out.contT
	if _, err := waiter.Expect(ctx, "released"); err != nil {
		return out, err
	}
	return out, nil
}
