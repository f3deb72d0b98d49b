package reliability

import (
	"context"
	"fmt"
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
			oracle := startOracle(t)
			cfg := lockerConfig{
				Lock:       lockConfig{Addr: srv.Addr(), Kind: v.kind, Watchdog: lease, FairWait: 2 * time.Second},
				OracleAddr: oracle.Addr(),
				Fence:      v.fence,
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(runs)*(2*lease+30*time.Second))
			defer cancel()
			a, b := startLocker(ctx, t, cfg), startLocker(ctx, t, cfg)
			var during, violated, rejected, invalid, guardDone int
			for run := range runs {
				if err := oracle.Reset(ctx); err != nil {
					t.Fatal(err)
				}
				holder, waiter := a, b
				if run%2 == 1 {
					holder, waiter = b, a
				}
				r, err := pauseRun(ctx, cfg, holder, waiter, fmt.Sprintf("t11-%s-%d", v.name, run), 2*lease)
				if err != nil {
					t.Fatalf("run %d: %v", run, err)
				}
				verdict, err := oracle.Verdict(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if r.acquiredDuring {
					during++
				} else {
					t.Errorf("run %d: the waiter acquired at %v, not during the pause [%v, %v]", run,
						time.Duration(r.waiterT), time.Duration(r.stopT), time.Duration(r.contT))
				}
				if r.check.Valid {
					t.Errorf("run %d: the resumed holder's first check found its hold valid: %+v", run, r.check)
				} else {
					invalid++
				}
				if r.check.GuardDone {
					guardDone++
				}
				if !r.wrote.OK {
					rejected++
				}
				if verdict.Violations() > 0 {
					violated++
				}
				if v.fence {
					if r.wrote.OK {
						t.Errorf("run %d: the resumed holder's stale write was accepted", run)
					}
					if verdict.Violations() != 0 {
						t.Errorf("run %d: fenced run with violations: %v", run, verdict)
					}
				}
			}
			t.Logf("T11 %s: %d runs, lease %v, pause %v: waiter acquired during the pause %d/%d, first check invalid %d/%d (guard already done %d), stale write rejected %d/%d, runs with violations %d/%d",
				v.name, runs, lease, 2*lease, during, runs, invalid, runs, guardDone, rejected, runs, violated, runs)
			if !v.fence && violated*100 < runs*95 {
				t.Errorf("canary: violations in %d of %d runs, want >= 95%%: the oracle is blind", violated, runs)
			}
		})
	}
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
func pauseRun(ctx context.Context, cfg lockerConfig, holder, waiter *workerProc, name string, pause time.Duration) (pauseOutcome, error) {
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
