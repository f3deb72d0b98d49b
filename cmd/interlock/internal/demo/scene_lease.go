package demo

import (
	"context"
	"errors"
	"time"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/rlock"
)

// sceneLease is scene 1: a fixed lease shorter than the job, and no
// watchdog. The lease runs out while A still works, B takes the lock, and
// both process the order.
func (d *demo) sceneLease(ctx context.Context) error {
	n := d.n
	n.scene("1. A fixed lease shorter than the job, without a watchdog",
		"Workers A and B each lock "+demoOrder+", check the ledger, and process the order unless\n"+
			"someone did. A takes a fixed lease of "+secs(demoLease)+", but its job takes "+secs(demoLongJob)+".")
	lock, ledger := d.names("lease")
	ctxA, ctxB := interlock.WithOwner(ctx, 1), interlock.WithOwner(ctx, 1)
	ma, mb := rlock.New(d.a, lock), rlock.New(d.b, lock)

	if err := ma.LockLease(ctxA, demoLease); err != nil {
		return err
	}
	d.chart.acquired(ctxA, "A", "lease "+secs(demoLease))
	n.say("A", "locked %s with a %s lease and no watchdog", demoOrder, secs(demoLease))
	aJob, b, err := d.startJobs(ctxA, ctxB, ledger, demoLongJob, mb)
	if err != nil {
		return err
	}
	defer aJob.Stop()
	defer b.stop()

	var bStart, bEnd, aEnd time.Duration
	var bJob <-chan time.Time
	for aEnd == 0 || bEnd == 0 {
		select {
		case err := <-b.C():
			b.got()
			if err != nil {
				return err
			}
			bStart = n.elapsed()
			d.chart.acquired(ctxB, "B", "")
			n.say("B", "locked %s: A's lease ran out while A was still working", demoOrder)
			if err := d.expectUnprocessed(ctxB, ledger, "B", demoShortJob); err != nil {
				return err
			}
			t := time.NewTimer(demoShortJob)
			defer t.Stop()
			bJob = t.C
		case <-bJob:
			bJob = nil
			if err := d.recordAndUnlock(ctxB, ledger, "B", mb); err != nil {
				return err
			}
			bEnd = n.elapsed()
			n.say("B", "done: recorded in the ledger, unlocked")
		case <-aJob.C:
			if err := d.record(ctxA, ledger, "A"); err != nil {
				return err
			}
			d.chart.note("A", "writes the ledger too")
			aEnd = n.elapsed()
			err := ma.Unlock(ctxA)
			d.chart.released("A", err)
			if !errors.Is(err, interlock.ErrNotHeld) {
				return storyf("A's unlock after its lease ran out returned %v, want %v", err, interlock.ErrNotHeld)
			}
			n.say("A", "done: recorded in the ledger; its unlock fails: the lock is not A's any more")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	done, err := d.ledger(ctx, ledger)
	if err != nil {
		return err
	}
	overlap := min(aEnd, bEnd) - bStart
	if len(done) != 2 || overlap <= 0 {
		return storyf("scene 1: ledger %v and overlap %v, want two entries and an overlap", done, overlap)
	}
	n.verdict("DOUBLE PROCESSING: %s was processed twice (ledger: %v).\n"+
		"A and B were both inside the lock for %s; A learned it only when its unlock failed.",
		demoOrder, done, secs(overlap))
	return nil
}

// startJobs is how scenes 1 and 2 go on once A holds the lock: A checks
// the ledger and starts its job, of length job, on the returned timer;
// then B starts waiting for the lock. The caller stops both.
func (d *demo) startJobs(ctxA, ctxB context.Context, ledger string, job time.Duration, mb *rlock.Mutex) (*time.Timer, *asyncLock, error) {
	if err := d.expectUnprocessed(ctxA, ledger, "A", job); err != nil {
		return nil, nil, err
	}
	aJob := time.NewTimer(job)
	b := lockAsync(ctxB, mb.Lock)
	d.n.say("B", "waits for the lock")
	return aJob, b, nil
}

// expectUnprocessed is a worker's check under the lock: it reads the
// ledger and tells that the order is still to be processed, in a job of
// length job. Finding it processed means the scene went wrong.
func (d *demo) expectUnprocessed(ctx context.Context, ledger, who string, job time.Duration) error {
	done, err := d.ledger(ctx, ledger)
	if err != nil {
		return err
	}
	if len(done) > 0 {
		return storyf("%s found %s processed by %v already", who, demoOrder, done)
	}
	d.n.say(who, "the ledger has no entry for %s: starts its %s job", demoOrder, secs(job))
	return nil
}
