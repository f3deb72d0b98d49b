package latch

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/lockcore"
	"github.com/interlock-go/interlock/internal/pubsub"
	"github.com/interlock-go/interlock/internal/report"
	"github.com/interlock-go/interlock/internal/script"
)

// Latch is a count-down latch shared with Redisson's RCountDownLatch of
// the same name: it is open when its count is 0 or it does not exist.
type Latch struct {
	o lockcore.Object
}

// New returns the latch called name. A bad name or a nil client is
// reported by every method, before anything is sent; so is, on a Redis
// Cluster, a name with braces, whose latch channel Redisson puts in
// another slot.
func New(c *interlock.Client, name string) *Latch {
	l := &Latch{lockcore.NewObject(c, string(interlock.KindLatch), name, keys.LatchChannel)}
	if c != nil && l.o.Ready(report.OpInspect) == nil && strings.ContainsAny(l.o.Key(), "{}") && l.o.RT().RC.Mode() == rueidis.ClientModeCluster {
		l.o.Refuse(lockcore.Invalid("name %q has braces: on a cluster its channel %q is in another slot, as Redisson names it", l.o.Key(), l.o.Channel()))
	}
	return l
}

// Name returns the latch's name as given: its Redis key, unless the
// Client maps names (interlock.WithNameMapper).
func (l *Latch) Name() string { return l.o.Name() }

// TrySetCount closes the latch with count, and reports whether it did: it
// changes nothing when the latch exists.
func (l *Latch) TrySetCount(ctx context.Context, count int64) (bool, error) {
	if err := l.o.Ready(report.OpSet); err != nil {
		return false, err
	}
	if count < 0 {
		return false, l.o.Invalid(report.OpSet, "count %d must not be negative", count)
	}
	pub, err := l.o.Publish(ctx)
	if err != nil {
		return false, l.o.OpErr(report.OpSet, err)
	}
	n, err := lockcore.Int(l.o.Run(ctx, script.LatchTrySet(), []string{l.o.Key(), l.o.Channel()}, "1", strconv.FormatInt(count, 10), pub))
	switch {
	case err != nil:
		return false, l.o.Fail(ctx, report.OpSet, err)
	case n != 1:
		return false, l.o.Misfit(ctx, report.OpSet) // set, or another object's key
	}
	return true, nil
}

// CountDown takes one from the count; the count reaching 0 opens the
// latch and wakes every waiter, Go or Java. On an open latch it does
// nothing. Like interlock.Locker's Unlock it still counts down given a
// ctx that has already ended, for up to 5s.
func (l *Latch) CountDown(ctx context.Context) error {
	if err := l.o.Ready(report.OpRelease); err != nil {
		return err
	}
	rctx, cancel := lockcore.Detach(ctx)
	defer cancel()
	start := l.o.Begin()
	pub, err := l.o.Publish(rctx)
	if err == nil {
		err = lockcore.Done(l.o.RunCounted(rctx, script.LatchCountDown(), []string{l.o.Key(), l.o.Channel()}, "0", pub))
	}
	err = l.o.Fail(rctx, report.OpRelease, err)
	l.o.Released(ctx, start, time.Time{}, 0, err == nil, err)
	return err
}

// Count returns the count, 0 when the latch is open.
func (l *Latch) Count(ctx context.Context) (int64, error) {
	if err := l.o.Ready(report.OpInspect); err != nil {
		return 0, err
	}
	n, err := l.count(ctx)
	if err != nil {
		return 0, l.o.Fail(ctx, report.OpInspect, err)
	}
	return n, nil
}

// count reads the count; its error is the caller's to wrap.
func (l *Latch) count(ctx context.Context) (int64, error) {
	rc := l.o.RT().RC
	return lockcore.Int(rc.Do(ctx, script.Resendable(rc.B().Get().Key(l.o.Key()).Build())))
}

// Await returns nil once the latch is open, or ctx's error when ctx ends
// first (at once, sending nothing, when it has ended already). It reads
// the count when a count-down to 0 is announced, after a reconnection, and
// at least every 2s.
func (l *Latch) Await(ctx context.Context) error {
	if err := l.o.Ready(report.OpAcquire); err != nil {
		return err
	}
	_, err := l.o.Wait(ctx, lockcore.Await{Policy: pubsub.WakeOnZero, Forever: true}, func(ctx context.Context) (bool, time.Duration, error) {
		if l.o.RT().Closed() {
			return false, 0, interlock.ErrClosed
		}
		n, err := l.count(ctx)
		return err == nil && n <= 0, -1, err // -1: nothing expires; the count only falls by a count-down
	})
	return l.o.Fail(ctx, report.OpAcquire, err)
}

// Delete removes the latch, opening it, and reports whether it existed; a
// key that holds no count is refused.
// As in Redisson, waiters are not woken: their next periodic read finds
// the latch open.
func (l *Latch) Delete(ctx context.Context) (bool, error) {
	if err := l.o.Ready(report.OpDelete); err != nil {
		return false, err
	}
	if _, err := l.o.Probe(ctx); err != nil {
		return false, l.o.OpErr(report.OpDelete, err)
	}
	pub, err := l.o.Publish(ctx)
	if err != nil {
		return false, l.o.OpErr(report.OpDelete, err)
	}
	n, err := lockcore.Int(l.o.Run(ctx, script.LatchDelete(), []string{l.o.Key(), l.o.Channel()}, "1", pub))
	return n == 1, l.o.Fail(ctx, report.OpDelete, err)
}
