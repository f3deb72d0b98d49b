package lockcore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/runtime"
	"github.com/interlock-go/interlock/renewal"
)

const (
	// unlockResendFor is how long after its first send an unlock without a
	// reply is sent again, while ctx allows: a quarter of latchTTL, so
	// every resend finds the latch an earlier send may have written.
	unlockResendFor = latchTTL / 4
	// The pause before a resend doubles from unlockPauseMin to
	// unlockPauseMax.
	unlockPauseMin = 50 * time.Millisecond
	unlockPauseMax = time.Second
)

// Unlock releases one hold of the calling owner, as interlock.Locker says.
func (l *Common) Unlock(ctx context.Context) error {
	owner, holder, err := l.owner(ctx)
	if err != nil {
		return err
	}
	pub, err := l.rt.PublishCommand(ctx)
	if err != nil {
		return l.opErr("unlock", err)
	}
	lease, held, end := l.rt.Renewal.Release(l.name, holder)
	outcome := renewal.Unknown
	defer func() { end(outcome) }()
	v := &vals{owner: owner, holder: holder, lease: lease, publish: pub,
		latch: keys.UnlockLatch(l.name, keys.RequestID())}
	var acks runtime.Acks
	res := l.resend(ctx, &acks, v)
	// The script may have written the latch whatever it answered.
	l.rt.DeleteLater(v.latch)
	n, err := res.AsInt64()
	if err == nil && n == l.kind.ExpiredReply && n != 0 {
		err = rueidis.Nil
	}
	var maxHeld error
	if !held && (err == nil || rueidis.IsRedisNil(err)) {
		maxHeld = l.rt.Renewal.MaxHeld(l.name, holder) // read once, and forgotten
	}
	switch {
	case rueidis.IsRedisNil(err):
		outcome = renewal.NotHeld
		if maxHeld != nil {
			return l.opErr("unlock", fmt.Errorf("%w: %w", interlock.ErrNotHeld, maxHeld))
		}
		return l.opErr("unlock", interlock.ErrNotHeld)
	case err != nil:
		return l.opErr("unlock", err)
	case n == 1:
		outcome = renewal.Released
	default:
		outcome = renewal.Decremented
	}
	err = l.rt.CheckAcks(&acks)
	if n == 1 && l.kind.Upgrade != nil && l.holds(owner) > 0 && (err == nil || errors.Is(err, interlock.ErrReplication)) {
		l.rt.WakeAll(ctx, l.channel) // a downgrade: readers may enter, and nothing was published
	}
	return l.opErrIf("unlock", err)
}

// resend sends the unlock until a reply comes back: a connection error
// leaves it unknown whether the server ran it, so the same request goes
// again under the same latch, which makes the repeats harmless. A
// partition's connection can fail several sends in a row while it is
// being replaced.
func (l *Common) resend(ctx context.Context, acks *runtime.Acks, v *vals) rueidis.RedisResult {
	first := time.Now()
	for wait := unlockPauseMin; ; wait = min(2*wait, unlockPauseMax) {
		res := l.exec(ctx, acks, &l.kind.Unlock, v)
		// Any reply ends the loop, nil ("not held") included.
		_, isRedisErr := rueidis.IsRedisErr(res.Error())
		replied := res.Error() == nil || isRedisErr || rueidis.IsRedisNil(res.Error())
		if replied || ctx.Err() != nil || time.Since(first)+wait > unlockResendFor || pause(ctx, wait) != nil {
			return res
		}
	}
}
