package reliability

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/interlock-go/interlock/internal/redistest"
)

// maxPoll is the longest a waiter sleeps between attempts when no release
// message comes (the plan's MaxPoll).
const maxPoll = time.Second

// TestT10ClientCrash is T10: the holder's process is killed with SIGKILL
// while a waiter in another process waits. The waiter must acquire within
// lease + MaxPoll + 200 ms (fair lock: lease + its wait timeout + 1 s) of
// the kill, in every run, and the oracle must see no overlap and no lost
// update. Each run kills one process and starts one: the survivor of a run
// holds in the next.
// crashLanesNightly is how many chains of processes a T10 kind runs at
// once in the nightly tier.
const crashLanesNightly = 5

func TestT10ClientCrash(t *testing.T) {
	runs := sized(10, 200)
	lease := time.Duration(sized(1, 3)) * time.Second
	const fairWait = 2 * time.Second
	for _, kind := range allKinds {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			bound := lease + maxPoll + 200*time.Millisecond
			if kind == kindFair {
				bound = lease + fairWait + time.Second
			}
			srv := redistest.Standalone(t)
			oracle := startOracle(t)
			cfg := lockerConfig{
				Lock:       lockConfig{Addr: srv.Addr(), Kind: kind, Watchdog: lease, FairWait: fairWait},
				OracleAddr: oracle.Addr(),
				Fence:      kind.hasToken(),
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(runs)*(bound+30*time.Second))
			defer cancel()
			// The runs are spread over lanes that run at once, each its
			// own chain of processes on its own lock names: a run is
			// mostly a lease running out.
			var (
				mu     sync.Mutex
				delays []time.Duration
				writes int64
				wg     sync.WaitGroup
			)
			lanes := sized(1, crashLanesNightly)
			for lane := range lanes {
				wg.Go(func() {
					holder := startLocker(ctx, t, cfg)
					for run := lane; run < runs; run += lanes {
						d, w, err := crashRun(ctx, t, cfg, holder, fmt.Sprintf("t10-%s-%d", kind, run))
						if err != nil {
							t.Errorf("run %d: %v", run, err)
							return
						}
						mu.Lock()
						writes += w
						delays = append(delays, d.delay)
						mu.Unlock()
						if d.delay > bound {
							t.Errorf("run %d: the waiter acquired %v after the kill, want <= %v", run, d.delay, bound)
						}
						holder = d.next
					}
				})
			}
			wg.Wait()
			if len(delays) != runs {
				t.Fatalf("%d of %d runs completed", len(delays), runs)
			}
			oracle.Verify(t, writes)
			slices.Sort(delays)
			t.Logf("T10 %s: %d runs, lease %v, hand-off after kill: min %v median %v max %v (bound %v)",
				kind, runs, lease, delays[0].Round(time.Millisecond), delays[len(delays)/2].Round(time.Millisecond),
				delays[len(delays)-1].Round(time.Millisecond), bound)
		})
	}
}

// startLocker starts a "locker" worker and waits until it is ready.
func startLocker(ctx context.Context, t *testing.T, cfg lockerConfig) *workerProc {
	t.Helper()
	w := startWorker(t, "locker", cfg)
	if _, err := w.Expect(ctx, "ready"); err != nil {
		t.Fatal(err)
	}
	return w
}

// crashOutcome is one T10 run: the kill-to-acquire delay and the process
// that now holds.
type crashOutcome struct {
	delay time.Duration
	next  *workerProc
}

// crashRun: holder takes name and completes one oracle section; a new
// process waits for name; the holder is killed; the waiter's acquisition
// is timed from the kill. It returns the writes the oracle accepted.
func crashRun(ctx context.Context, t *testing.T, cfg lockerConfig, holder *workerProc, name string) (crashOutcome, int64, error) {
	var writes int64
	waiter := startWorker(t, "locker", cfg)
	if err := holder.SendJSON("lock", lockCmd{Name: name, Section: true, Pause: 5 * time.Millisecond}); err != nil {
		return crashOutcome{}, 0, err
	}
	var wrote stepMsg
	if err := holder.ExpectJSON(ctx, "wrote", &wrote); err != nil {
		return crashOutcome{}, 0, err
	}
	if wrote.OK {
		writes++
	}
	if _, err := holder.Expect(ctx, "exited"); err != nil {
		return crashOutcome{}, 0, err
	}
	if _, err := waiter.Expect(ctx, "ready"); err != nil {
		return crashOutcome{}, 0, err
	}
	if err := waiter.SendJSON("lock", lockCmd{Name: name, Section: true, Pause: 5 * time.Millisecond}); err != nil {
		return crashOutcome{}, 0, err
	}
	if _, err := waiter.Expect(ctx, "locking"); err != nil {
		return crashOutcome{}, 0, err
	}
	// Let the waiter's first attempt (and a fair waiter's enqueueing)
	// reach the server before the kill.
	settle := time.NewTimer(100 * time.Millisecond)
	<-settle.C
	killed := monoNow()
	if err := holder.Kill(); err != nil {
		return crashOutcome{}, 0, err
	}
	if err := holder.Wait(ctx); err == nil {
		return crashOutcome{}, 0, fmt.Errorf("holder %v exited normally after SIGKILL", holder)
	}
	var got holdMsg
	if err := waiter.ExpectJSON(ctx, "acquired", &got); err != nil {
		return crashOutcome{}, 0, err
	}
	if err := waiter.ExpectJSON(ctx, "wrote", &wrote); err != nil {
		return crashOutcome{}, 0, err
	}
	if wrote.OK {
		writes++
	}
	if _, err := waiter.Expect(ctx, "exited"); err != nil {
		return crashOutcome{}, 0, err
	}
	return crashOutcome{delay: time.Duration(got.T - killed), next: waiter}, writes, nil
}
