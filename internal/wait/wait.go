// Package wait is the waiting algorithm every interlock lock kind shares:
// Redisson's try, subscribe, try, wait, loop, on a pubsub.Hub.
package wait

import (
	"context"
	"time"

	"github.com/interlock-go/interlock/pubsub"
)

// Attempt tries to acquire once. When the lock is busy it returns how long
// to wait at most before trying again: the holder's PTTL, or a negative
// duration to wait for a message only.
type Attempt func(ctx context.Context) (ok bool, retryIn time.Duration, err error)

// Spec describes one acquisition.
type Spec struct {
	// Hub and Channel are where releases are announced; Sharded chooses
	// SSUBSCRIBE.
	Hub     *pubsub.Hub
	Channel string
	Sharded bool
	// Forever waits until acquired or ctx ends; otherwise Deadline bounds
	// the whole acquisition, and a Deadline not after the first attempt
	// makes it a single attempt with no subscription.
	Forever  bool
	Deadline time.Time
	// Queue lets the caller queue behind waiters of this process that are
	// already parked on Channel (pubsub.Hub.Join) instead of trying first.
	// Leave it false for an owner that may re-enter at once.
	Queue bool
	// Try is the attempt.
	Try Attempt
}

// Acquire runs the algorithm: try; subscribe and wait for the server's
// confirmation; try again, so that a release between the first try and the
// subscription is not missed; then wait for a message, the retry bound or
// the end of ctx or of the wait, and try again, until acquired. A
// wait that runs out is (false, nil); ctx's end is ctx's error.
//
// With Queue, a caller that finds this process's waiters already parked on
// the channel joins them at the back, without a round trip, and waits
// before its first try: a release then wakes the longest waiter of the
// process, not a crowd. On the wire nothing changes.
func Acquire(ctx context.Context, s Spec) (bool, error) {
	waits := s.Forever || time.Now().Before(s.Deadline)
	if waits && s.Queue {
		if sub, d, ok := s.Hub.Join(s.Channel, s.Sharded); ok {
			defer sub.Close()
			return loop(ctx, s, sub, d)
		}
	}
	ok, _, err := s.Try(ctx)
	if ok || err != nil || !waits {
		return ok, err
	}
	subCtx := ctx
	if !s.Forever {
		var cancel context.CancelFunc
		subCtx, cancel = context.WithDeadline(ctx, s.Deadline)
		defer cancel()
	}
	sub, err := s.Hub.Subscribe(subCtx, s.Channel, s.Sharded)
	if err != nil {
		if ctx.Err() == nil && subCtx.Err() != nil {
			return false, nil // the wait ran out while subscribing
		}
		return false, err
	}
	defer sub.Close()
	ok, d, err := s.Try(ctx)
	if ok || err != nil {
		return ok, err
	}
	return loop(ctx, s, sub, d)
}

// loop waits on sub for at most d, then tries, until acquired, out of
// time, or ctx ends.
func loop(ctx context.Context, s Spec, sub *pubsub.Subscription, d time.Duration) (bool, error) {
	for {
		if !s.Forever {
			left := time.Until(s.Deadline)
			if left <= 0 {
				return false, nil
			}
			if d < 0 || d > left {
				d = left
			}
		}
		if err := sub.Wait(ctx, d); err != nil {
			return false, err
		}
		ok, next, err := s.Try(ctx)
		if ok || err != nil {
			return ok, err
		}
		d = next
	}
}
