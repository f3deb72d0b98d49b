package lockcore

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/report"
)

// Extend sets a new lease on the calling owner's hold, as interlock.Locker
// says: the kind's Extend script sets the lock's TTL to lease while the
// owner still holds it, and the Client's records (Remaining, the guards'
// deadlines) follow. A watchdog hold is renewed at once with the watchdog
// timeout instead, and stays a watchdog hold. An owner this Client records
// no live hold for gets ErrNotHeld without anything sent.
func (l *Common) Extend(ctx context.Context, lease time.Duration) error {
	owner, holder, err := l.owner(ctx, report.OpExtend)
	if err != nil {
		return err
	}
	if lease < time.Millisecond {
		return l.Invalid(report.OpExtend, "lease %v must be at least 1ms", lease)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	held, watchdog := l.rt.Renewal.Extending(l.name, holder)
	if !held {
		return l.notExtended(holder)
	}
	if watchdog {
		lease = l.rt.Cfg.Watchdog
	}
	sent := time.Now()
	ok, err := extended(l.send(ctx, &l.kind.Extend, &vals{owner: owner, holder: holder, lease: lease}))
	switch {
	case err != nil:
		return l.Fail(ctx, report.OpExtend, err)
	case !ok:
		if err := l.Misfit(ctx, report.OpExtend); err != nil {
			return err
		}
		l.rt.Renewal.Lose(l.name, holder) // gone on the server
		return l.notExtended(holder)
	case !l.rt.Renewal.Extend(l.name, holder, lease, sent):
		return l.notExtended(holder) // released meanwhile
	}
	return nil
}

// extended reads an Extend script's answer: 1 or {1} when it extended.
func extended(r rueidis.RedisResult) (bool, error) {
	if a, err := r.AsIntSlice(); err == nil {
		return len(a) == 1 && a[0] == 1, nil
	}
	n, err := r.AsInt64()
	return n == 1, err
}

// notExtended is the error of an Extend by holder, which holds nothing:
// ErrNotHeld, with why when the Client knows: the cause of the hold's
// loss, or its lease having run out.
func (l *Common) notExtended(holder string) error {
	why := l.rt.Renewal.LostCause(l.name, holder)
	if known, expired := l.rt.Renewal.Expired(l.name, holder); why == nil && known && expired {
		why = report.ErrLeaseExpired
	}
	if why != nil {
		return l.OpErr(report.OpExtend, fmt.Errorf("%w: %w", report.ErrNotHeld, why))
	}
	return l.OpErr(report.OpExtend, report.ErrNotHeld)
}
