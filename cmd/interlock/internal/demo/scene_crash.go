package demo

import (
	"context"
	"slices"
	"syscall"
	"time"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/rlock"
)

// crashTolerance is how much later than the watchdog timeout after a crash
// the lock may be taken before the scene counts as failed: scheduling on a
// busy machine, not the lock, accounts for it.
const crashTolerance = time.Second

// sceneCrash is scene 3: a holder process with the watchdog is killed. Its
// renewals stop with it, so its lock expires within the watchdog timeout
// and B gets it.
func (d *demo) sceneCrash(ctx context.Context) error {
	n := d.n
	n.scene("3. A holder that crashes",
		"Worker C is a separate interlock process holding the lock with the watchdog.\n"+
			"It is killed mid-job: no unlock, no more renewals.")
	lock, ledger := d.names("crash")
	ctxB := interlock.WithOwner(ctx, 1)
	mb := rlock.New(d.b, lock)

	h, err := d.startHolder(ctx, lock, ledger, "")
	if err != nil {
		return err
	}
	d.chart.acquired(ctx, "C", "watchdog")
	n.say("C", "(pid %d) locked %s with the watchdog; starts a long job", h.pid(), demoOrder)
	crash := time.NewTimer(demoCrashAfter)
	defer crash.Stop()
	sample := time.NewTicker(demoSample)
	defer sample.Stop()
	for crashed := false; !crashed; {
		select {
		case <-sample.C:
			if err := d.sayTTL(ctx, lock, " (C's watchdog renews it)"); err != nil {
				return err
			}
		case <-crash.C:
			crashed = true
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := h.signal(syscall.SIGKILL); err != nil {
		return err
	}
	crashedAt := n.elapsed()
	d.chart.note("C", "killed (SIGKILL)")
	n.say("C", "killed with SIGKILL: a crash")
	b := lockAsync(ctxB, mb.Lock)
	defer b.stop()
	n.say("B", "waits for the lock")
	if err := b.wait(ctx); err != nil {
		return err
	}
	gap := n.elapsed() - crashedAt
	d.chart.acquired(ctxB, "B", "")
	n.say("B", "locked %s, %s after the crash: the lock expired", demoOrder, secs(gap))
	if gap > demoWatchdog+crashTolerance {
		return storyf("scene 3: the lock was taken %v after the crash, want at most about %v", gap, demoWatchdog)
	}
	if err := d.expectUnprocessed(ctxB, ledger, "B", demoShortJob); err != nil {
		return err
	}
	if err := sleepCtx(ctx, demoShortJob); err != nil {
		return err
	}
	if err := d.recordAndUnlock(ctxB, ledger, "B", mb); err != nil {
		return err
	}
	n.say("B", "done: recorded in the ledger, unlocked")
	done, err := d.ledger(ctx, ledger)
	if err != nil {
		return err
	}
	if !slices.Equal(done, []string{"B"}) {
		return storyf("scene 3: ledger %v, want [B]", done)
	}
	n.verdict("NO DEADLOCK: the dead holder's lock expired %s after the crash, within the %s\n"+
		"watchdog timeout, however long C's job would have taken (ledger: %v).", secs(gap), secs(demoWatchdog), done)
	return nil
}

// sleepCtx waits for d, or until ctx ends. It is the demo's stand-in for
// a job's work.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
