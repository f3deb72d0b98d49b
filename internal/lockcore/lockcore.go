// Package lockcore is the one engine behind every interlock lock kind. It
// implements the common method set (interlock.Locker) once: argument
// checks, owners, one attempt that takes back a lost acquisition, the
// waiting loop, the unlock resent under its latch, guards and errors. A
// kind is a Kind declaration plus the methods only it has.
//
// Synchronizers that are not locks (semaphores, latches) embed Object
// instead: the same checks, errors, safe-mode acks, background clean-up and
// waiting loop, with receipts where locks have owners.
package lockcore

import (
	"context"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/report"
	"github.com/interlock-go/interlock/internal/runtime"
)

const (
	// latchTTL bounds how long the server remembers an unlock's outcome,
	// longer than all of an unlock's sends together.
	latchTTL = 20 * time.Second
	// undoTimeout bounds how long a caller waits for the undo of an
	// acquisition whose reply was lost.
	undoTimeout = time.Second
	// ReleaseTimeout bounds a release (Unlock, a semaphore's Release, a
	// latch's CountDown), which runs detached from the caller's context
	// (Detach): as long as an unlock is resent without an answer.
	ReleaseTimeout = unlockResendFor
)

// Detach returns the context a release runs on: ctx itself while it has
// not ended, so that a caller's deadline still bounds its release; once it
// has (a deferred Unlock of a request that is done), its values alone,
// ended after ReleaseTimeout, so that the release still happens instead of
// leaving the hold to run out.
func Detach(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx.Err() == nil {
		return ctx, func() {}
	}
	return context.WithTimeout(context.WithoutCancel(ctx), ReleaseTimeout)
}

// Common is one named lock of one kind on one Client, and carries the
// common method set. Kinds embed it.
type Common struct {
	base
	kind    *Kind
	keys    []string
	grace   time.Duration               // a fair waiter's default wait timeout
	backoff func() func() time.Duration // a spin lock's pauses; nil: pub/sub
	poll    time.Duration               // when positive, the longest wait for a message
}

// New returns the lock called name of kind on client (an
// *interlock.Client): every key and channel derives from name as the
// Client's NameMapper maps it. A bad (mapped) name or a nil client is
// reported by every method, before anything is sent.
func New(client any, kind *Kind, name string) Common {
	l := Common{base: newBase(client, string(kind.Event), name), kind: kind}
	if kind.Channel != nil {
		l.channel = kind.Channel(l.name)
	}
	l.Expect(l.name, ShapeLock)
	for i, k := range kind.Keys {
		l.keys = append(l.keys, k(l.name))
		if i < len(kind.KeyShapes) {
			l.Expect(l.keys[i], kind.KeyShapes[i])
		}
	}
	return l
}

// Key returns the lock's key: its name as the Client's NameMapper maps it,
// from which its other keys derive.
func (l *Common) Key() string { return l.name }

// RT returns the Client's runtime (nil for a nil client).
func (l *Common) RT() *runtime.Runtime { return l.rt }

// FairWait is the wait-timeout option of the fair kinds: the timeout, and
// the argument error of a bad one, which NewFair reports.
type FairWait struct {
	Timeout time.Duration
	Err     error
}

// Set sets the timeout to d, which must be at least 1ms.
func (w *FairWait) Set(d time.Duration) {
	if d < time.Millisecond && w.Err == nil {
		w.Err = Invalid("wait timeout %v must be at least 1ms", d)
	}
	w.Timeout = d
}

// NewFair is New for a fair kind, whose waiters keep their place for
// w.Timeout unless they say otherwise; w.Err is reported by every method.
func NewFair(client any, kind *Kind, name string, w FairWait) Common {
	l := New(client, kind, name)
	l.grace = w.Timeout
	l.Refuse(w.Err)
	return l
}

// NewSpin is New for a lock whose waiters poll with backoff (one per
// acquisition) and never subscribe; optErr is an option error to report.
func NewSpin(client any, kind *Kind, name string, backoff func() func() time.Duration, optErr error) Common {
	l := New(client, kind, name)
	l.backoff = backoff
	l.Refuse(optErr)
	return l
}

// PollEvery makes l's waiters try at least every d even when no message
// comes (0: only at the holder's TTL), for names whose other holders
// announce nothing (Redisson's spin locks).
func PollEvery(l *Common, d time.Duration) { l.poll = d }

// owner returns the calling owner's string and its holder (with Suffix).
// Errors are those of operation op.
func (l *Common) owner(ctx context.Context, op report.Op) (owner, holder string, err error) {
	if err := l.Ready(op); err != nil {
		return "", "", err
	}
	if owner, err = l.rt.Owner(ctx); err != nil {
		return "", "", l.OpErr(op, err)
	}
	return owner, owner + l.kind.Suffix, nil
}

// holds is how many holds this Client records for holder.
func (l *Common) holds(holder string) int { return l.rt.Renewal.Holds(l.name, holder) }

// exec runs call with v in safe mode when it is on (a records the acks).
func (l *Common) exec(ctx context.Context, a *runtime.Acks, call *Call, v *vals) rueidis.RedisResult {
	var buf callBuf
	ks, args := l.fill(&buf, call, v)
	return l.rt.Exec(ctx, a, call.Script(), ks, args)
}

// send runs call with v, never followed by WAIT.
func (l *Common) send(ctx context.Context, call *Call, v *vals) rueidis.RedisResult {
	var buf callBuf
	ks, args := l.fill(&buf, call, v)
	return l.rt.Send(ctx, call.Script(), ks, args)
}

// Lock acquires as interlock.Locker says.
func (l *Common) Lock(ctx context.Context) error {
	_, _, err := l.acquire(ctx, Request{Forever: true})
	return err
}

// LockLease acquires with a fixed lease, as interlock.Locker says.
func (l *Common) LockLease(ctx context.Context, lease time.Duration) error {
	if lease < time.Millisecond {
		return l.Invalid(report.OpAcquire, "lease %v must be at least 1ms", lease)
	}
	_, _, err := l.acquire(ctx, Request{Lease: lease, Forever: true})
	return err
}

// TryLock tries for up to wait, as interlock.Locker says.
func (l *Common) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	_, ok, err := Acquire(ctx, l, Request{Lease: lease, Wait: wait})
	return ok, err
}

func (l *Common) checkTry(wait, lease time.Duration) error {
	if l.kind.Fair != nil && wait > 0 && wait < time.Millisecond {
		return l.Invalid(report.OpAcquire, "wait %v and lease %v must not be negative, and each at least 1ms unless 0", wait, lease)
	}
	if wait < 0 || lease < 0 || (lease > 0 && lease < time.Millisecond) {
		return l.Invalid(report.OpAcquire, "wait %v and lease %v must not be negative, and a lease at least 1ms", wait, lease)
	}
	return nil
}

// ForceUnlock deletes the lock whoever holds it, as interlock.Locker says;
// a key that holds no lock of any kind is refused and left alone.
func (l *Common) ForceUnlock(ctx context.Context) (bool, error) {
	if err := l.Ready(report.OpForceUnlock); err != nil {
		return false, err
	}
	if _, err := l.Probe(ctx); err != nil {
		return false, l.OpErr(report.OpForceUnlock, err)
	}
	pub, err := l.rt.PublishCommand(ctx)
	if err != nil {
		return false, l.OpErr(report.OpForceUnlock, err)
	}
	// A renewal that finds the key gone before Drop runs counts the loss
	// as this forced unlock's, not as a deletion by someone else.
	defer l.rt.Renewal.Forcing(l.name)()
	n, err := l.send(ctx, &l.kind.Force, &vals{publish: pub}).AsInt64()
	if err != nil {
		return false, l.Fail(ctx, report.OpForceUnlock, err)
	}
	if n == 1 {
		l.rt.Renewal.Drop(l.name)
	}
	return n == 1, nil
}

// Guard returns a context that ends with the caller's hold, as
// interlock.Locker says.
func (l *Common) Guard(ctx context.Context) context.Context {
	if l.err != nil {
		return cancelled(ctx, l.OpErr(report.OpGuard, l.err))
	}
	owner, err := l.rt.Owner(ctx)
	if err != nil {
		return cancelled(ctx, l.OpErr(report.OpGuard, err))
	}
	if g, ok := l.rt.Renewal.Guard(ctx, l.name, owner+l.kind.Suffix); ok {
		return g
	}
	return cancelled(ctx, l.OpErr(report.OpGuard, report.ErrNotHeld))
}

// Remaining returns how long the caller's hold is certainly valid, as
// interlock.Locker says.
func (l *Common) Remaining(ctx context.Context) time.Duration {
	if l.err != nil {
		return 0
	}
	owner, err := l.rt.Owner(ctx)
	if err != nil {
		return 0
	}
	return l.rt.Renewal.Remaining(l.name, owner+l.kind.Suffix)
}

// IsLocked reports whether anyone holds the lock.
func (l *Common) IsLocked(ctx context.Context) (bool, error) {
	if l.err != nil {
		return false, l.OpErr(report.OpInspect, l.err)
	}
	rc := l.rt.RC
	var (
		res rueidis.RedisResult
		err error
	)
	switch k := l.kind; {
	case k.IsLocked != nil:
		ks, args := l.fill(nil, k.IsLocked, &vals{})
		res, err = l.ProbeScript(ctx, k.IsLocked.Script(), ks, args)
	case k.LockedMode != "":
		res, err = l.probeOne(ctx, rc.B().Hget().Key(l.name).Field("mode").Build())
	default:
		res, err = l.probeOne(ctx, rc.B().Exists().Key(l.name).Build())
	}
	if err != nil {
		return false, l.Fail(ctx, report.OpInspect, err)
	}
	if l.kind.LockedMode != "" {
		mode, err := res.ToString()
		if rueidis.IsRedisNil(err) {
			err = nil
		}
		if err != nil {
			return false, l.Fail(ctx, report.OpInspect, err)
		}
		return mode == l.kind.LockedMode, nil
	}
	n, err := res.AsInt64()
	if err != nil {
		return false, l.Fail(ctx, report.OpInspect, err)
	}
	return n == 1, nil
}

// IsHeld reports whether the calling owner holds the lock.
func (l *Common) IsHeld(ctx context.Context) (bool, error) {
	n, err := l.HoldCount(ctx)
	return n > 0, err
}

// HoldCount returns the calling owner's holds as the server counts them.
func (l *Common) HoldCount(ctx context.Context) (int, error) {
	if l.err != nil {
		return 0, l.OpErr(report.OpInspect, l.err)
	}
	owner, err := l.rt.Owner(ctx)
	if err != nil {
		return 0, l.OpErr(report.OpInspect, err)
	}
	rc := l.rt.RC
	res, err := l.probeOne(ctx, rc.B().Hget().Key(l.name).Field(owner+l.kind.Suffix).Build())
	if err != nil {
		return 0, l.OpErr(report.OpInspect, err)
	}
	n, err := Int(res)
	if err != nil {
		return 0, l.Fail(ctx, report.OpInspect, err)
	}
	return int(n), nil
}

// TTL returns the lock's time to live, as interlock.Locker says.
func (l *Common) TTL(ctx context.Context) (time.Duration, error) {
	if l.err != nil {
		return 0, l.OpErr(report.OpInspect, l.err)
	}
	d, err := l.PTTL(ctx, l.name)
	if err != nil {
		return 0, l.OpErr(report.OpInspect, err)
	}
	return d, nil
}

// PTTL reads key's time to live, 0 when it does not exist and -1 when it
// never expires, after checking what the synchronizer's keys hold (Probe),
// in the same round trip.
func (b *base) PTTL(ctx context.Context, key string) (time.Duration, error) {
	rc := b.rt.RC
	res, err := b.probeOne(ctx, rc.B().Pttl().Key(key).Build())
	if err != nil {
		return 0, err
	}
	return pttlOf(res.AsInt64())
}

// pttlOf reads the reply n of PTTL.
func pttlOf(n int64, err error) (time.Duration, error) {
	switch {
	case err != nil:
		return 0, err
	case n == -2:
		return 0, nil
	case n < 0:
		return -1, nil
	}
	return time.Duration(n) * time.Millisecond, nil
}

// cancelled returns a context derived from parent, already cancelled with
// cause.
func cancelled(parent context.Context, cause error) context.Context {
	ctx, cancel := context.WithCancelCause(parent)
	cancel(cause)
	return ctx
}

// Done returns the error of a script's reply; a nil reply is no error.
func Done(r rueidis.RedisResult) error {
	if err := r.Error(); err != nil && !rueidis.IsRedisNil(err) {
		return err
	}
	return nil
}
