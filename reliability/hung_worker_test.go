package reliability

// T25 (docs/reliability.md, hazard H22): a worker that hangs for ever
// after Lock, in a process that stays alive and keeps renewing its other
// locks. With interlock.WithMaxHold the watchdog stops renewing that hold
// at MaxHold: the guard must end then (± 50 ms), with a cause wrapping
// ErrLockLost and ErrMaxHold, and the key must be gone within MaxHold +
// lease + 200 ms of the acquisition. Neither bound is a safety property,
// so the PR gate, on a loaded machine, allows ± 200 ms and + 600 ms.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/rlock"
)

// t25Clients is how many Clients share the runs: each run's hung worker
// lives on one of them, beside the others'.
const t25Clients = 4

// t25Result is one run as measured.
type t25Result struct {
	lostAfter time.Duration // guard end − Lock call
	freeAfter time.Duration // key seen gone − Lock call
	gone      bool          // the key was seen gone
	cause     error
	err       error
}

func TestT25HungWorker(t *testing.T) {
	runs := sized(3, 100)
	maxHold := time.Duration(sized(1, 10)) * time.Second
	lease := time.Duration(sized(1, 3)) * time.Second
	lostTolerance := time.Duration(sized(200, 50)) * time.Millisecond
	freeBound := maxHold + lease + time.Duration(sized(600, 200))*time.Millisecond

	srv := redistest.Standalone(t)
	rc := srv.Client(t)
	clients := make([]*interlock.Client, t25Clients)
	for i := range clients {
		c, err := interlock.New(srv.Client(t), interlock.WithWatchdogTimeout(lease), interlock.WithMaxHold(maxHold))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		clients[i] = c
	}
	// The hung workers block on this until the test ends.
	hang := make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), maxHold+lease+time.Minute)
	defer cancel()

	results := make([]t25Result, runs)
	var wg, hung sync.WaitGroup
	for run := range runs {
		wg.Go(func() {
			// Spread the acquisitions over a second, so the deadlines
			// do not all fall on one tick.
			stagger := time.NewTimer(time.Duration(run) * time.Second / time.Duration(runs))
			<-stagger.C
			results[run] = t25Run(ctx, clients[run%len(clients)], rc, fmt.Sprintf("t25-%d", run), hang, &hung)
		})
	}
	wg.Wait()
	close(hang)
	hung.Wait()

	var lost, free []time.Duration
	var okLost, okFree int
	for run, r := range results {
		if r.err != nil {
			t.Errorf("run %d: %v", run, r.err)
			continue
		}
		lost = append(lost, r.lostAfter)
		free = append(free, r.freeAfter)
		if d := r.lostAfter - maxHold; d < -lostTolerance || d > lostTolerance {
			t.Errorf("run %d: guard ended %v after Lock, want MaxHold %v ± %v", run, r.lostAfter, maxHold, lostTolerance)
		} else {
			okLost++
		}
		if !errors.Is(r.cause, interlock.ErrMaxHold) || !errors.Is(r.cause, interlock.ErrLockLost) {
			t.Errorf("run %d: guard cause %v, want ErrMaxHold and ErrLockLost", run, r.cause)
		}
		if r.freeAfter > freeBound || !r.gone {
			t.Errorf("run %d: lock free %v after Lock (seen gone: %v), want <= %v", run, r.freeAfter, r.gone, freeBound)
		} else {
			okFree++
		}
	}
	t.Logf("T25: %d runs, MaxHold %v, lease %v: Lost at MaxHold ± %v in %d/%d (after Lock: %s); lock free <= %v in %d/%d (%s)",
		runs, maxHold, lease, lostTolerance, okLost, runs, nhSummary(lost), freeBound, okFree, runs, nhSummary(free))
}

// t25Run: a worker goroutine takes name and hangs until the test ends;
// the run waits for its guard to end, then for the key to go.
func t25Run(ctx context.Context, c *interlock.Client, rc rueidis.Client, name string, hang <-chan struct{}, hung *sync.WaitGroup) t25Result {
	var r t25Result
	m := rlock.New(c, name)
	octx := interlock.WithOwner(ctx, interlock.NewOwnerID())
	start := time.Now()
	if err := m.Lock(octx); err != nil {
		r.err = fmt.Errorf("lock: %w", err)
		return r
	}
	guard := m.Guard(context.WithoutCancel(octx))
	locked := make(chan struct{})
	hung.Go(func() { // the hung worker: it holds and never unlocks
		close(locked)
		<-hang
	})
	<-locked
	select {
	case <-guard.Done():
	case <-ctx.Done():
		r.err = fmt.Errorf("the guard never ended: %w", ctx.Err())
		return r
	}
	r.lostAfter = time.Since(start)
	r.cause = context.Cause(guard)
	// Follow the key until it is gone. A renewal sent just before MaxHold
	// may land after the guard ended and push the expiry once more; the
	// bound allows for it, so the measurement must too.
	for {
		pttl, err := rc.Do(ctx, rc.B().Pttl().Key(name).Build()).AsInt64()
		if err != nil {
			r.err = fmt.Errorf("pttl: %w", err)
			return r
		}
		if pttl == -2 {
			r.freeAfter = time.Since(start)
			r.gone = true
			return r
		}
		if pttl < 0 {
			r.err = fmt.Errorf("key %q has no expiry (PTTL %d)", name, pttl)
			return r
		}
		wait := time.NewTimer(min(time.Duration(pttl)*time.Millisecond+2*time.Millisecond, 50*time.Millisecond))
		select {
		case <-wait.C:
		case <-ctx.Done():
			wait.Stop()
			r.err = ctx.Err()
			return r
		}
	}
}
