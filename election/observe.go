package election

import (
	"context"
	"errors"
	"time"

	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/pubsub"
	"github.com/interlock-go/interlock/internal/report"
)

// Observe sends each leader it reads: the current one first, then every
// new term (another holder or a new token), retrying through failures.
// Receive until the channel closes, which it does when ctx ends or the
// Client closes; the package documentation ("Values and observation") says
// when it looks.
func (e *Election) Observe(ctx context.Context) <-chan Leader {
	out := make(chan Leader)
	if err := e.l.Ready(report.OpInspect); err != nil || ctx.Err() != nil {
		close(out)
		return out
	}
	go func() {
		defer close(out)
		e.observe(ctx, out)
	}()
	return out
}

// The waits of an observer that found nobody leading, or could not read:
// from vacantFirst, doubling, up to the recheck interval.
const vacantFirst = 5 * time.Millisecond

// expiryMargin is how long after the lock's PTTL an observer reads again,
// to see it gone.
const expiryMargin = 2 * time.Millisecond

// observe is Observe's goroutine: it subscribes to the lock's channel and
// the election's own before each read (so that a change after the read
// wakes it), sends what changed, and waits for a message, the lock's
// expiry, or the recheck interval.
func (e *Election) observe(ctx context.Context, out chan<- Leader) {
	rt := e.l.RT()
	var watchers []*pubsub.Watcher
	defer func() {
		for _, w := range watchers {
			w.Close()
		}
	}()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var (
		last  Leader
		seen  bool
		quick = vacantFirst // the next wait after a vacancy or a failure
	)
	poll := vacantFirst // while not subscribed: the next wait, doubling
	again := false      // a wake-up came while a leader was being sent
	for {
		if ctx.Err() != nil || rt.Closed() {
			return
		}
		if watchers == nil {
			var err error
			if watchers, err = e.watch(ctx); ended(ctx, err) {
				return
			}
		}
		wait := e.recheck
		cur, pttl, ok, err := e.read(ctx)
		switch {
		case ended(ctx, err):
			return
		case err != nil || !ok:
			// A failure, or a vacancy that a Java acquisition may fill
			// without a message: look again soon, then less often.
			wait = quick
			quick = min(2*quick, e.recheck)
		default:
			quick = vacantFirst
			if !seen || cur != last {
				if !e.send(ctx, out, cur, watchers, &again) {
					return
				}
				last, seen = cur, true
			}
			if pttl > 0 {
				wait = min(wait, pttl+expiryMargin)
			}
		}
		if watchers == nil {
			// Not subscribed (refused, or no connection): poll, as lock
			// waiters do then, and subscribe again at the next look.
			wait = min(wait, poll)
			poll = min(2*poll, e.recheck)
		} else {
			poll = vacantFirst
		}
		if again {
			// Woken while the receiver was slow: look again at once.
			again, wait = false, 0
		}
		timer.Reset(wait)
		var lockC, ownC <-chan struct{}
		if watchers != nil {
			lockC, ownC = watchers[0].C(), watchers[1].C()
		}
		select {
		case <-ctx.Done():
			return
		case <-lockC:
		case <-ownC:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// send hands ld to the receiver. It gives up (false) when ctx ends, or
// when the Client closes meanwhile (the hub's close wakes its watchers),
// so that a receiver that stopped reading keeps no goroutine past either;
// a wake-up that comes while it waits sets again.
func (e *Election) send(ctx context.Context, out chan<- Leader, ld Leader, watchers []*pubsub.Watcher, again *bool) bool {
	var lockC, ownC <-chan struct{}
	if watchers != nil {
		lockC, ownC = watchers[0].C(), watchers[1].C()
	}
	for {
		select {
		case out <- ld:
			return true
		case <-ctx.Done():
			return false
		case <-lockC:
		case <-ownC:
		}
		if e.l.RT().Closed() {
			return false
		}
		*again = true
	}
}

// ended reports whether err (or ctx) ends the observation: the Client
// closed, or ctx ended.
func ended(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, report.ErrClosed) || errors.Is(err, pubsub.ErrClosed)
}

// watch subscribes to the lock's channel (releases, Java's included) and
// the election's own (Go leaders' new terms).
func (e *Election) watch(ctx context.Context) ([]*pubsub.Watcher, error) {
	rt := e.l.RT()
	sharded, err := rt.Sharded(ctx)
	if err != nil {
		return nil, err
	}
	name := e.l.Key()
	lockW, err := rt.Hub.Watch(ctx, keys.LockChannel(name), sharded, pubsub.WakeLock)
	if err != nil {
		return nil, err
	}
	ownW, err := rt.Hub.Watch(ctx, keys.LeaderChannel(name), sharded, pubsub.WakeLock)
	if err != nil {
		lockW.Close()
		return nil, err
	}
	return []*pubsub.Watcher{lockW, ownW}, nil
}
