package demo

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/rlock"
)

// sceneWatchdog is scene 2: the same kind of job with the watchdog. The
// lock outlives several watchdog timeouts because it is renewed; B waits
// until A unlocks and finds the order processed.
func (d *demo) sceneWatchdog(ctx context.Context) error {
	n := d.n
	n.scene("2. The same job with the watchdog",
		fmt.Sprintf("A locks without a lease: the lock lives %s past its last renewal and the watchdog\n"+
			"renews it every %s while A runs. A's job takes %s, over twice the timeout.",
			secs(demoWatchdog), secs(demoWatchdog/3), secs(demoSafeJob)))
	lock, ledger := d.names("watchdog")
	ctxA, ctxB := interlock.WithOwner(ctx, 1), interlock.WithOwner(ctx, 1)
	ma, mb := rlock.New(d.a, lock), rlock.New(d.b, lock)

	if err := ma.Lock(ctxA); err != nil {
		return err
	}
	d.chart.acquired(ctxA, "A", "watchdog")
	n.say("A", "locked %s with the watchdog", demoOrder)
	aJob, b, err := d.startJobs(ctxA, ctxB, ledger, demoSafeJob, mb)
	if err != nil {
		return err
	}
	defer aJob.Stop()
	defer b.stop()
	sample := time.NewTicker(demoSample)
	defer sample.Stop()

	var aEnd, bStart time.Duration
	for bStart == 0 {
		select {
		case <-sample.C:
			if aEnd == 0 {
				if err := d.sayTTL(ctx, lock, " (renewed; A still works)"); err != nil {
					return err
				}
			}
		case <-aJob.C:
			if err := d.record(ctxA, ledger, "A"); err != nil {
				return err
			}
			d.chart.note("A", "writes the ledger")
			err := ma.Unlock(ctxA)
			d.chart.released("A", err)
			if err != nil {
				return storyf("A's unlock: %v", err)
			}
			aEnd = n.elapsed()
			n.say("A", "done: recorded in the ledger, unlocked")
		case err := <-b.C():
			b.got()
			if err != nil {
				return err
			}
			bStart = n.elapsed()
			d.chart.acquired(ctxB, "B", "")
			if aEnd == 0 {
				return storyf("B locked at %s while A held the lock", stamp(bStart))
			}
			n.say("B", "locked %s, woken by A's unlock", demoOrder)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	done, err := d.ledger(ctx, ledger)
	if err != nil {
		return err
	}
	if !slices.Equal(done, []string{"A"}) {
		return storyf("scene 2: ledger %v, want [A]", done)
	}
	n.say("B", "the ledger says A processed %s: nothing to do; unlocks", demoOrder)
	if err := mb.Unlock(ctxB); err != nil {
		return err
	}
	d.chart.released("B", nil)
	n.verdict("SAFE: the lock lived %s, %.1f watchdog timeouts, because A was alive to renew it.\n"+
		"B waited for A's unlock; %s was processed once (ledger: %v).",
		secs(aEnd), float64(aEnd)/float64(demoWatchdog), demoOrder, done)
	return nil
}
