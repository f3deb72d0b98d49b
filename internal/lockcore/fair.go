package lockcore

import (
	"context"
	"time"

	"github.com/interlock-go/interlock/internal/report"
	"github.com/interlock-go/interlock/internal/wait"
)

const (
	// giveUpTimeout bounds how long a waiter that stopped waiting waits
	// for leaving the queue.
	giveUpTimeout = time.Second
	// A queued waiter that found the lock free but not yet taken by the
	// waiter ahead of it (no message will come: that waiter takes it
	// within a round trip, or leaves the queue only at its deadline) asks
	// again after a pause that doubles from fairRetryMin to fairRetryMax.
	fairRetryMin = 10 * time.Millisecond
	fairRetryMax = time.Second
	// maxQueuedWait bounds each wait for the waiter's message: a message
	// lost to a reconnect, a proxy or a publish-mode mismatch must not
	// hold it for the minutes the script's answer may name.
	maxQueuedWait = time.Second
)

// queuedWait is how long a queued waiter with the given grace waits at
// most before it asks again: at most a quarter of the grace, so that one
// whose turn has come asks before its place runs out.
func queuedWait(grace time.Duration) time.Duration {
	return max(min(maxQueuedWait, grace/4), fairRetryMin)
}

// acquireFair is acquire for a fair kind: waiters queue on the server and
// each waits on its own channel, "<channel>:<owner>", for its turn. A
// waiter that stops without the lock leaves the queue.
func (a *attempt) acquireFair(ctx context.Context, r Request) (bool, error) {
	l := a.l
	if err := ctx.Err(); err != nil {
		return false, err // nothing sent, nothing to clean up
	}
	fair := l.kind.Fair
	if !r.waits() {
		a.call, a.grace = &fair.TryAcquire, l.grace
		ok, _, err := a.try(ctx)
		return ok, err
	}
	a.grace, a.queues = l.grace, true
	if !r.Forever {
		a.grace = r.Wait // Redisson's tryLock(wait, ...) queues with its wait
	}
	if err := l.rt.CheckClockSkew(ctx); err != nil {
		return false, l.OpErr(report.OpAcquire, err) // nothing queued yet
	}
	sharded, err := l.rt.Sharded(ctx)
	if err != nil {
		return false, l.OpErr(report.OpAcquire, err)
	}
	busy := 0 // consecutive "free, but not your turn" answers
	spec := wait.Spec{
		Hub:      l.rt.Hub,
		Channel:  l.channel + ":" + a.owner,
		Sharded:  sharded,
		Forever:  r.Forever,
		Deadline: time.Now().Add(r.Wait),
		MaxWait:  queuedWait(a.grace),
		Waiters:  l.rt.Waiters(),
		Try: func(ctx context.Context) (bool, time.Duration, error) {
			ok, retryIn, err := a.try(ctx)
			switch {
			case ok:
				a.queued = false // acquiring took the owner out of the queue
				return true, 0, nil
			case err != nil || retryIn > 0:
				busy = 0
				return false, retryIn, err
			}
			busy++
			return false, min(fairRetryMin<<min(busy-1, 10), fairRetryMax), nil
		},
	}
	if a.transfers() {
		// A releasing holder of this Client passes the lock only to a
		// waiter at the head of the queue (fair_transfer.lua): the line
		// of this Client's waiters follows the queue's order, in which
		// the first tries' answers come back.
		spec.Transfer = a
		try := spec.Try
		spec.Try = func(ctx context.Context) (bool, time.Duration, error) {
			ok, retryIn, err := try(ctx)
			if !ok && err == nil && a.queued {
				l.rt.Transfers.Place(a.newOffer())
			}
			return ok, retryIn, err
		}
	}
	ok, err := wait.Acquire(ctx, spec)
	err = l.opErrIf(report.OpAcquire, err)
	if !ok && a.queued {
		// Whatever ended the wait, the owner must not keep a place in the
		// queue, where it would hold up everyone behind it.
		a.giveUp(ctx)
	}
	return ok, err
}

// giveUp takes the owner out of the queue (Redisson's acquireFailed),
// moving the deadlines behind it a grace earlier. It is sent whether or
// not the owner is still queued, since a lost reply may have queued it,
// and runs like undo: retried in the background, awaited until ctx's end.
func (a *attempt) giveUp(ctx context.Context) {
	l := a.l
	until := time.Now().Add(a.grace + l.rt.Cfg.Watchdog)
	pending := a.pending
	if pending != nil {
		until = until.Add(a.sendBound()) // it may queue as late as its send gives up
	}
	l.rt.Cleanup(l.name, a.owner, until, func(ctx context.Context) error {
		if err := awaitSent(ctx, pending); err != nil {
			return err // leaving first would let a late try queue the owner
		}
		pub, err := l.rt.PublishCommand(ctx)
		if err != nil {
			return err
		}
		return Done(l.send(ctx, &l.kind.Fair.GiveUp, &vals{owner: a.owner, holder: a.holder, grace: a.grace, publish: pub}))
	})
	l.rt.AwaitCleanup(ctx, l.name, a.owner, giveUpTimeout)
}
