package reliability

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/interlock-go/interlock/internal/redistest"
)

// TestT00Baseline is T0: no fault. 8 goroutines in each of 2 processes take
// and release a lock, with one oracle read-modify-write inside, first all
// on one name, then on 100 names. Acceptance: 0 overlaps, 0 lost updates,
// 0 errors. Throughput is logged as "T0 <kind> <n>-name: <x> cycles/s"
// and must not fall more than 20 % below the last green run's
// (baseline_trend_test.go).
func TestT00Baseline(t *testing.T) {
	// Cycles per kind, split evenly between the two name sets.
	total := sized(2000, 10000)
	trend := newT00Trend(t)
	t.Cleanup(func() { trend.save(t) })
	for _, kind := range allKinds {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			for _, n := range []int{1, 100} {
				runBaseline(t, trend, kind, n, total/2)
			}
		})
	}
}

// runBaseline runs one T0 workload of cycles acquisitions over n names.
func runBaseline(t *testing.T, trend *t00Trend, kind lockKind, n, cycles int) {
	const procs, goroutines = 2, 8
	srv := redistest.Standalone(t)
	oracle := startOracle(t)
	w := workload{
		// No fault here, so the watchdog has the headroom of a loaded
		// 2-core machine: with 3 s, a 2 s stall of a race-built worker
		// lost 14 holds of 1000 in CI (and nothing overlapped).
		Lock:       lockConfig{Addr: srv.Addr(), Kind: kind, Watchdog: 10 * time.Second, FairWait: 2 * time.Second},
		OracleAddr: oracle.Addr(),
		Fence:      kind.hasToken(),
		Names:      names(fmt.Sprintf("t0-%s-%d", kind, n), n),
		Goroutines: goroutines,
	}
	ws := make([]*workerProc, procs)
	for i := range ws {
		wi := w
		wi.Cycles = cycles / procs
		if i == 0 {
			wi.Cycles += cycles % procs
		}
		ws[i] = startWorker(t, "workload", wi)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, p := range ws {
		if _, err := p.Expect(ctx, "ready"); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range ws {
		if err := p.Send("go"); err != nil {
			t.Fatal(err)
		}
	}
	var sum workloadResult
	for _, p := range ws {
		var r workloadResult
		if err := p.ExpectJSON(ctx, "result", &r); err != nil {
			t.Fatal(err)
		}
		if err := p.Wait(ctx); err != nil {
			t.Errorf("worker %v: %v", p, err)
		}
		sum.add(r)
	}
	if sum.Cycles != int64(cycles) {
		t.Errorf("%d cycles completed, want %d", sum.Cycles, cycles)
	}
	if n := sum.errorCount(); n != 0 {
		t.Errorf("%d errors %v; first: %q", n, sum.Errors, sum.Samples)
	}
	v := oracle.Verify(t, sum.Writes)
	if sum.Writes != sum.Cycles {
		t.Errorf("%d writes accepted for %d cycles", sum.Writes, sum.Cycles)
	}
	trend.record(n, sum.Cycles, sum.Elapsed.Seconds())
	t.Logf("T0 %s %d-name: %.0f cycles/s (%d cycles, %d procs x %d goroutines, %v; remaining validity from %s; %v)",
		kind, n, float64(sum.Cycles)/sum.Elapsed.Seconds(), sum.Cycles, procs, goroutines,
		sum.Elapsed.Round(time.Millisecond), sum.Remaining, v)
}
