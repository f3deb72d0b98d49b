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
	"errors"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/pubsub"
	"github.com/interlock-go/interlock/internal/renewal"
	"github.com/interlock-go/interlock/internal/runtime"
	"github.com/interlock-go/interlock/internal/script"
)

const (
	// latchTTL bounds how long the server remembers an unlock's outcome,
	// longer than all of an unlock's sends together.
	latchTTL = 20 * time.Second
	// undoTimeout bounds how long a caller waits for the undo of an
	// acquisition whose reply was lost.
	undoTimeout = time.Second
)

// Common is one named lock of one kind on one Client, and carries the
// common method set. Kinds embed it.
type Common struct {
	client  *interlock.Client
	rt      *runtime.Runtime
	kind    *Kind
	name    string // the mapped name: the lock's hash, and what its keys derive from
	given   string // the name the caller gave, for Name and errors
	channel string
	keys    []string
	grace   time.Duration               // a fair waiter's default wait timeout
	backoff func() func() time.Duration // a spin lock's pauses; nil: pub/sub
	poll    time.Duration               // when positive, the longest wait for a message
	err     error                       // the argument error every method returns
	obs     interlock.Observer          // nil: no events are built
	label   *renewal.Label              // the kind's, with an Observer only
}

// New returns the lock called name of kind on c: every key and channel
// derives from name as c's NameMapper maps it. A bad (mapped) name or a nil
// client is reported by every method, before anything is sent.
func New(c *interlock.Client, kind *Kind, name string) Common {
	rt := runtime.Of(c)
	l := Common{client: c, rt: rt, kind: kind, name: mapName(rt, name), given: name, obs: observer(rt)}
	if l.obs != nil {
		l.label = &renewal.Label{Kind: string(kind.Event), Name: name}
	}
	switch err := checkName(l.name, name); {
	case c == nil:
		l.err = fmt.Errorf("%w: nil client", interlock.ErrInvalid)
	case err != nil:
		l.err = fmt.Errorf("%w: %w", interlock.ErrInvalid, err)
	}
	if kind.Channel != nil {
		l.channel = kind.Channel(l.name)
	}
	for _, k := range kind.Keys {
		l.keys = append(l.keys, k(l.name))
	}
	return l
}

// observer returns the Client's Observer, nil without one (rt may be nil).
func observer(rt *runtime.Runtime) interlock.Observer {
	if rt == nil {
		return nil
	}
	o, _ := rt.Cfg.Observer.(interlock.Observer)
	return o
}

// observe tells the Observer, which must be set, about e on this lock.
func (l *Common) observe(ctx context.Context, e interlock.Event) {
	e.Kind, e.Name = l.kind.Event, l.given
	l.obs.Observe(ctx, e)
}

// mapName returns name as rt's NameMapper maps it (rt may be nil).
func mapName(rt *runtime.Runtime, name string) string {
	if rt == nil || rt.Cfg.Names == nil {
		return name
	}
	return rt.Cfg.Names.Map(name)
}

// checkName is keys.Check of the mapped name, saying what given mapped to
// when the two differ.
func checkName(mapped, given string) error {
	err := keys.Check(mapped)
	if err != nil && mapped != given {
		err = fmt.Errorf("name %q is mapped to an invalid name: %w", given, err)
	}
	return err
}

// NewFair is New for a fair kind, whose waiters keep their place for grace
// unless they say otherwise; optErr is an option error to report.
func NewFair(c *interlock.Client, kind *Kind, name string, grace time.Duration, optErr error) Common {
	l := New(c, kind, name)
	l.grace = grace
	if l.err == nil {
		l.err = optErr
	}
	return l
}

// NewSpin is New for a lock whose waiters poll with backoff (one per
// acquisition) and never subscribe; optErr is an option error to report.
func NewSpin(c *interlock.Client, kind *Kind, name string, backoff func() func() time.Duration, optErr error) Common {
	l := New(c, kind, name)
	l.backoff = backoff
	if l.err == nil {
		l.err = optErr
	}
	return l
}

// Refuse makes every method of l fail with err, an option error found
// after New, unless l already has an argument error.
func Refuse(l *Common, err error) {
	if l.err == nil {
		l.err = err
	}
}

// PollEvery makes l's waiters try at least every d even when no message
// comes (0: only at the holder's TTL), for names whose other holders
// announce nothing (Redisson's spin locks).
func PollEvery(l *Common, d time.Duration) { l.poll = d }

// Invalid returns an error about a bad argument, wrapping
// interlock.ErrInvalid, for an option to hold until the lock's methods
// return it as an *interlock.Error.
func Invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{interlock.ErrInvalid}, args...)...)
}

// InvalidOf is the *interlock.Error of operation op on l about a bad
// argument.
func InvalidOf(l *Common, op interlock.Op, format string, args ...any) error {
	return l.invalid(op, format, args...)
}

// invalid is the *interlock.Error of operation op about a bad argument.
func (l *Common) invalid(op interlock.Op, format string, args ...any) error {
	return l.opErr(op, Invalid(format, args...))
}

// ready returns the argument error of operation op, or interlock.ErrClosed
// once the Client is closed.
func (l *Common) ready(op interlock.Op) error {
	if l.err != nil {
		return l.opErr(op, l.err)
	}
	if l.rt.Closed() {
		return interlock.ErrClosed
	}
	return nil
}

// opErr wraps err from operation op in an *interlock.Error, once; context
// errors and a closed Client are returned as themselves.
func (l *Common) opErr(op interlock.Op, err error) error {
	var wrapped *interlock.Error
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, pubsub.ErrClosed) || errors.Is(err, interlock.ErrClosed):
		return interlock.ErrClosed
	case errors.As(err, &wrapped):
		return err
	}
	return &interlock.Error{Kind: l.kind.Event, Op: op, Name: l.given, Err: err}
}

// owner returns the calling owner's string and its holder (with Suffix).
// Errors are those of operation op.
func (l *Common) owner(ctx context.Context, op interlock.Op) (owner, holder string, err error) {
	if err := l.ready(op); err != nil {
		return "", "", err
	}
	if owner, err = l.client.Owner(ctx); err != nil {
		return "", "", l.opErr(op, err)
	}
	return owner, owner + l.kind.Suffix, nil
}

// holds is how many holds this Client records for holder.
func (l *Common) holds(holder string) int { return l.rt.Renewal.Holds(l.name, holder) }

// exec runs call with v in safe mode when it is on (a records the acks).
func (l *Common) exec(ctx context.Context, a *runtime.Acks, call *Call, v *vals) rueidis.RedisResult {
	return l.rt.Exec(ctx, a, call.Script(), l.fill(call.Keys, v), l.fill(call.Args, v))
}

// send runs call with v, never followed by WAIT.
func (l *Common) send(ctx context.Context, call *Call, v *vals) rueidis.RedisResult {
	return call.Script().Exec(ctx, l.rt.RC, l.fill(call.Keys, v), l.fill(call.Args, v))
}

// Name returns the lock's name as given; its Redis key is that name as the
// Client's NameMapper maps it (interlock.WithNameMapper).
func (l *Common) Name() string { return l.given }

// Lock acquires as interlock.Locker says.
func (l *Common) Lock(ctx context.Context) error {
	_, _, err := l.acquire(ctx, 0, 0, true)
	return err
}

// LockLease acquires with a fixed lease, as interlock.Locker says.
func (l *Common) LockLease(ctx context.Context, lease time.Duration) error {
	if lease < time.Millisecond {
		return l.invalid(interlock.OpAcquire, "lease %v must be at least 1ms", lease)
	}
	_, _, err := l.acquire(ctx, lease, 0, true)
	return err
}

// TryLock tries for up to wait, as interlock.Locker says.
func (l *Common) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	_, ok, err := Acquire(ctx, l, lease, wait, false)
	return ok, err
}

func (l *Common) checkTry(wait, lease time.Duration) error {
	if l.kind.Fair != nil && wait > 0 && wait < time.Millisecond {
		return l.invalid(interlock.OpAcquire, "wait %v and lease %v must not be negative, and each at least 1ms unless 0", wait, lease)
	}
	if wait < 0 || lease < 0 || (lease > 0 && lease < time.Millisecond) {
		return l.invalid(interlock.OpAcquire, "wait %v and lease %v must not be negative, and a lease at least 1ms", wait, lease)
	}
	return nil
}

// ForceUnlock deletes the lock whoever holds it, as interlock.Locker says.
func (l *Common) ForceUnlock(ctx context.Context) (bool, error) {
	if err := l.ready(interlock.OpForceUnlock); err != nil {
		return false, err
	}
	pub, err := l.rt.PublishCommand(ctx)
	if err != nil {
		return false, l.opErr(interlock.OpForceUnlock, err)
	}
	n, err := l.send(ctx, &l.kind.Force, &vals{publish: pub}).AsInt64()
	if err != nil {
		return false, l.opErr(interlock.OpForceUnlock, err)
	}
	if n == 1 {
		l.rt.Renewal.Drop(l.name, interlock.ErrLockLost)
	}
	return n == 1, nil
}

// Guard returns a context that ends with the caller's hold, as
// interlock.Locker says.
func (l *Common) Guard(ctx context.Context) context.Context {
	if l.err != nil {
		return cancelled(ctx, l.opErr(interlock.OpGuard, l.err))
	}
	owner, err := l.client.Owner(ctx)
	if err != nil {
		return cancelled(ctx, l.opErr(interlock.OpGuard, err))
	}
	if g, ok := l.rt.Renewal.Guard(ctx, l.name, owner+l.kind.Suffix); ok {
		return g
	}
	return cancelled(ctx, l.opErr(interlock.OpGuard, interlock.ErrNotHeld))
}

// Remaining returns how long the caller's hold is certainly valid, as
// interlock.Locker says.
func (l *Common) Remaining(ctx context.Context) time.Duration {
	if l.err != nil {
		return 0
	}
	owner, err := l.client.Owner(ctx)
	if err != nil {
		return 0
	}
	return l.rt.Renewal.Remaining(l.name, owner+l.kind.Suffix)
}

// IsLocked reports whether anyone holds the lock.
func (l *Common) IsLocked(ctx context.Context) (bool, error) {
	if l.err != nil {
		return false, l.opErr(interlock.OpInspect, l.err)
	}
	rc := l.rt.RC
	var (
		locked bool
		err    error
	)
	switch k := l.kind; {
	case k.IsLocked != nil:
		var n int64
		n, err = l.send(ctx, k.IsLocked, &vals{}).AsInt64()
		locked = n == 1
	case k.LockedMode != "":
		var mode string
		mode, err = rc.Do(ctx, script.Resendable(rc.B().Hget().Key(l.name).Field("mode").Build())).ToString()
		if rueidis.IsRedisNil(err) {
			err = nil
		}
		locked = mode == k.LockedMode
	default:
		var n int64
		n, err = rc.Do(ctx, script.Resendable(rc.B().Exists().Key(l.name).Build())).AsInt64()
		locked = n == 1
	}
	if err != nil {
		return false, l.opErr(interlock.OpInspect, err)
	}
	return locked, nil
}

// IsHeld reports whether the calling owner holds the lock.
func (l *Common) IsHeld(ctx context.Context) (bool, error) {
	n, err := l.HoldCount(ctx)
	return n > 0, err
}

// HoldCount returns the calling owner's holds as the server counts them.
func (l *Common) HoldCount(ctx context.Context) (int, error) {
	if l.err != nil {
		return 0, l.opErr(interlock.OpInspect, l.err)
	}
	owner, err := l.client.Owner(ctx)
	if err != nil {
		return 0, l.opErr(interlock.OpInspect, err)
	}
	rc := l.rt.RC
	n, err := rc.Do(ctx, script.Resendable(rc.B().Hget().Key(l.name).Field(owner+l.kind.Suffix).Build())).AsInt64()
	switch {
	case rueidis.IsRedisNil(err):
		return 0, nil
	case err != nil:
		return 0, l.opErr(interlock.OpInspect, err)
	}
	return int(n), nil
}

// TTL returns the lock's time to live, as interlock.Locker says.
func (l *Common) TTL(ctx context.Context) (time.Duration, error) {
	if l.err != nil {
		return 0, l.opErr(interlock.OpInspect, l.err)
	}
	d, err := PTTL(ctx, l.rt.RC, l.name)
	if err != nil {
		return 0, l.opErr(interlock.OpInspect, err)
	}
	return d, nil
}

// PTTL reads key's time to live: 0 when it does not exist, -1 when it
// never expires.
func PTTL(ctx context.Context, rc rueidis.Client, key string) (time.Duration, error) {
	n, err := rc.Do(ctx, script.Resendable(rc.B().Pttl().Key(key).Build())).AsInt64()
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
