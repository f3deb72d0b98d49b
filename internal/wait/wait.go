// Package wait is the waiting algorithm every interlock lock kind shares:
// Redisson's try, subscribe, try, wait, loop, on a pubsub.Hub.
package wait

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/pubsub"
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
	// Policy is the channel's wake policy (the locks' by default).
	Policy pubsub.Policy
	// Pace, when set, replaces the default pacing of wake-ups that led
	// nowhere: a semaphore's releases announce the free count, so that
	// under contention several waiters are woken for each permit, and
	// losing the race is not a sign of spoofed messages.
	Pace Pace
	// HandOn passes a wake-up of one waiter that led to a failed try on
	// to the next waiter of the process (pubsub.Subscription.HandOn): set
	// it for a semaphore acquisition of several permits.
	HandOn bool
	// Forever waits until acquired or ctx ends; otherwise Deadline bounds
	// the whole acquisition, and a Deadline not after the first attempt
	// makes it a single attempt with no subscription.
	Forever  bool
	Deadline time.Time
	// Queue lets the caller queue behind waiters of this process that are
	// already parked on Channel (pubsub.Hub.Join) instead of trying first.
	// Leave it false for an owner that may re-enter at once.
	Queue bool
	// MaxWait, when positive, bounds each wait for a message, whatever
	// the attempt answered: the attempt's answer still tells the pacer
	// whether the lock changed hands.
	MaxWait time.Duration
	// Spin, when set, makes the waiter poll and never subscribe (a spin
	// lock): it returns the acquisition's backoff, whose every call gives
	// the next pause between attempts.
	Spin func() func() time.Duration
	// Try is the attempt.
	Try Attempt
	// Waiters, when set, counts the acquisitions parked in a wait: one
	// while this one waits after a failed try (or behind parked waiters).
	Waiters *atomic.Int64
	// Transfer, when set, lets a releasing holder of this process pass
	// the lock to the waiter while it waits for a message.
	Transfer Transfer
}

// Transfer is how a waiter stands ready, while it waits for a message, to
// be passed the lock by a holder of its process that releases it.
type Transfer interface {
	// Stand makes the waiter one to pass the lock to, until Taken; wake
	// ends its wait when a releasing holder's claim of it has an outcome
	// for it.
	Stand(wake func())
	// Taken ends the standing after the wait and reports whether the lock
	// was passed to the waiter, which then holds it. When ctx has ended
	// before the outcome of a claim came, it returns ctx's error and
	// leaves the outcome to be taken back if need be.
	Taken(ctx context.Context) (bool, error)
	// HoldOff is how long to wait before the next try: after a release
	// for another process's waiter, this process's first try leaves it
	// the time to take the lock.
	HoldOff() time.Duration
}

// park counts the caller in s.Waiters (if set) and returns the counter,
// for the caller's deferred unpark.
func (s *Spec) park() *atomic.Int64 {
	if s.Waiters != nil {
		s.Waiters.Add(1)
	}
	return s.Waiters
}

// unpark undoes park.
func unpark(n *atomic.Int64) {
	if n != nil {
		n.Add(-1)
	}
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
	if s.Spin != nil {
		return spin(ctx, s)
	}
	waits := s.Forever || time.Now().Before(s.Deadline)
	if waits && s.Queue {
		if sub, d, ok := s.Hub.Join(s.Channel, s.Sharded); ok {
			defer sub.Close()
			defer unpark(s.park())
			return loop(ctx, s, sub, d)
		}
	}
	ok, _, err := s.Try(ctx)
	if ok || err != nil || !waits {
		return ok, err
	}
	defer unpark(s.park())
	subCtx := ctx
	if !s.Forever {
		var cancel context.CancelFunc
		subCtx, cancel = context.WithDeadline(ctx, s.Deadline)
		defer cancel()
	}
	sub, err := s.Hub.SubscribeWith(subCtx, s.Channel, s.Sharded, s.Policy)
	if err != nil {
		if ctx.Err() == nil && subCtx.Err() != nil {
			return false, nil // the wait ran out while subscribing
		}
		if ctx.Err() == nil && !errors.Is(err, pubsub.ErrClosed) && !denied(err) {
			// Refused, or the subscription connection broke while
			// subscribing: the lock is still there to be polled.
			return poll(ctx, s)
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

// Wake-ups are hints: anyone allowed to PUBLISH on a lock's channel can
// send them. A waiter whose wake-ups lead nowhere is therefore paced.
const (
	// RetryInterval is how often, at most, a waiter tries again after
	// wake-ups that led nowhere, once RetryBurst of them were spent.
	RetryInterval = 60 * time.Millisecond
	// RetryBurst is how many such tries a waiter makes at once before
	// RetryInterval applies.
	RetryBurst = 3
	// handOffSlack is how much longer than the previous answer, less the
	// time since, the holder's TTL must be for a failed try to count as a
	// real hand-off: it absorbs millisecond rounding and reply jitter.
	handOffSlack = 10 * time.Millisecond
)

// loop waits on sub for at most d, then tries, until acquired, out of
// time, or ctx ends.
//
// A try that a message (not the retry bound) started and that failed is a
// wasted wake-up unless the lock changed hands meanwhile, which the TTL in
// the answer shows: a new holder's TTL starts afresh, an unchanged
// holder's only runs down. Wasted wake-ups are limited to RetryBurst at
// once and one per RetryInterval after that; while over the limit the
// waiter does not park, so the messages that arrive meanwhile are kept by
// the Subscription (a stored wake-up, or a passed-on one for another
// waiter of the process) and the next Wait returns at once. Real releases
// wake the waiter as fast as before, unless spoofed ones came just before.
func loop(ctx context.Context, s Spec, sub *pubsub.Subscription, d time.Duration) (bool, error) {
	var (
		p       = pacer{pace: s.Pace}
		lastTTL = d
		lastAt  = time.Now()
		wake    func()
	)
	if s.Transfer != nil {
		wake = sub.Wake
	}
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
		if s.MaxWait > 0 && (d < 0 || d > s.MaxWait) {
			d = s.MaxWait
		}
		if hold := p.hold(time.Now()); hold > 0 {
			if d >= 0 {
				hold = min(hold, d)
			}
			if err := Pause(ctx, hold); err != nil {
				return false, err
			}
			if d >= 0 {
				d -= hold // 0: Wait only takes a wake-up stored meanwhile
			}
		}
		start := time.Now()
		err := s.wait(ctx, sub, d, wake)
		if s.Transfer != nil {
			if ok, terr := s.Transfer.Taken(ctx); ok || terr != nil {
				sub.Pass()
				return ok, terr
			}
		}
		if err != nil {
			return false, err
		}
		if s.Transfer != nil {
			if err := s.holdOff(ctx); err != nil {
				return false, err
			}
		}
		woken := d < 0 || time.Since(start) < d
		ok, next, err := s.Try(ctx)
		if !ok && err == nil && s.HandOn {
			sub.HandOn()
		}
		sub.Pass() // the next waiter of a wake-all tries after us
		if ok || err != nil {
			return ok, err
		}
		now := time.Now()
		if woken && !handedOff(lastTTL, next, now.Sub(lastAt)) {
			p.spend(now)
		}
		lastTTL, lastAt, d = next, now, next
	}
}

// wait is sub.Wait, standing ready for a transfer meanwhile if s takes
// them.
func (s *Spec) wait(ctx context.Context, sub *pubsub.Subscription, d time.Duration, wake func()) error {
	if s.Transfer != nil {
		s.Transfer.Stand(wake)
	}
	return sub.Wait(ctx, d)
}

// holdOff waits what the transfer asks before a try, within the deadline.
func (s *Spec) holdOff(ctx context.Context) error {
	d := s.Transfer.HoldOff()
	if d > 0 && !s.Forever {
		d = min(d, time.Until(s.Deadline))
	}
	if d <= 0 {
		return nil
	}
	return Pause(ctx, d)
}

// handedOff reports whether a holder's TTL of next, seen elapsed after a
// TTL of last, shows a new acquisition (or a renewal) in between. Unknown
// TTLs (negative) show nothing.
func handedOff(last, next, elapsed time.Duration) bool {
	return last >= 0 && next >= 0 && next > last-elapsed+handOffSlack
}

// Pace is how many wake-ups that led nowhere a waiter may spend at once
// (Burst), and how often after that (Interval).
type Pace struct {
	Burst    int
	Interval time.Duration
}

// pacer limits wasted wake-ups to a Pace, by default RetryBurst at once
// and one per RetryInterval after that (a generic cell rate algorithm: tat
// is when the bucket would be full again).
type pacer struct {
	tat  time.Time
	pace Pace
}

func (p *pacer) limits() (int, time.Duration) {
	if p.pace.Burst > 0 && p.pace.Interval > 0 {
		return p.pace.Burst, p.pace.Interval
	}
	return RetryBurst, RetryInterval
}

// hold returns how long to stay away before the next try may be wasted.
func (p *pacer) hold(now time.Time) time.Duration {
	burst, interval := p.limits()
	return p.tat.Add(-time.Duration(burst-1) * interval).Sub(now)
}

// spend records a wasted try at now.
func (p *pacer) spend(now time.Time) {
	if p.tat.Before(now) {
		p.tat = now
	}
	_, interval := p.limits()
	p.tat = p.tat.Add(interval)
}

// Pause waits for d or until ctx ends, and returns ctx's error if it
// ended first.
func Pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Without pub/sub. A server or proxy that refuses SUBSCRIBE or SSUBSCRIBE
// as unknown or disabled (some managed Redis offerings do), or a
// subscription connection that breaks while subscribing, does not make
// Lock fail: the waiter
// polls instead, at the holder's TTL when the lock has one, else with a
// backoff from pollMin to pollMax. Hand-offs then take up to that long.
const (
	pollMin = 20 * time.Millisecond
	pollMax = time.Second
)

// denied reports whether err is a NOPERM reply: an ACL that lets the user
// lock but not subscribe is a configuration error, reported as such rather
// than hidden behind slower hand-offs. Any other refusal ("unknown
// command") or a broken connection is waited out by polling.
func denied(err error) bool {
	var re *rueidis.RedisError
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "NOPERM")
}

// spin tries, then pauses as the backoff says and tries again, until
// acquired, out of time or ctx ends. A pause never runs past the deadline,
// where one last attempt is made.
func spin(ctx context.Context, s Spec) (bool, error) {
	next := s.Spin()
	var parked *atomic.Int64
	defer func() { unpark(parked) }()
	for tries := 0; ; tries++ {
		ok, _, err := s.Try(ctx)
		if ok || err != nil {
			return ok, err
		}
		d := next()
		if !s.Forever {
			left := time.Until(s.Deadline)
			if left <= 0 {
				return false, nil
			}
			d = min(d, left)
		}
		if tries == 0 {
			parked = s.park()
		}
		if err := Pause(ctx, d); err != nil {
			return false, err
		}
	}
}

// poll is loop without a subscription.
func poll(ctx context.Context, s Spec) (bool, error) {
	backoff := pollMin
	for {
		ok, next, err := s.Try(ctx)
		if ok || err != nil {
			return ok, err
		}
		d := next
		if d < 0 || d > pollMax {
			d, backoff = backoff, min(2*backoff, pollMax)
		}
		if !s.Forever {
			left := time.Until(s.Deadline)
			if left <= 0 {
				return false, nil
			}
			d = min(d, left)
		}
		if err := Pause(ctx, d); err != nil {
			return false, err
		}
	}
}
