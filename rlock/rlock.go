package rlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/wait"
	"github.com/interlock-go/interlock/lua"
	"github.com/interlock-go/interlock/pubsub"
	"github.com/interlock-go/interlock/renewal"
)

var (
	// ErrNotHeld is returned by Unlock when the owner holds no hold on the
	// lock, and is the cause of a Guard asked for a lock that is not held.
	ErrNotHeld = errors.New("rlock: lock not held by this owner")
	// ErrLockLost is the cause of a Guard's cancellation when the lock was
	// lost: its key vanished or was force-unlocked, renewal failed for a
	// whole lease, or an explicit lease ran out before Unlock.
	ErrLockLost = errors.New("rlock: lock lost")
	// ErrClosed is returned once the Client is closed.
	ErrClosed = interlock.ErrClosed
)

const (
	// latchTTL bounds how long the server remembers an unlock's outcome,
	// longer than all of Unlock's attempts together.
	latchTTL = 20 * time.Second
	// unlockAttempts is how often Unlock sends its script when no reply
	// comes back; the latch makes the repeats harmless.
	unlockAttempts = 3
	// undoTimeout bounds the clean-up after an acquisition whose reply was
	// lost.
	undoTimeout = time.Second
)

// task renews watchdog holds of reentrant locks.
var task = &renewal.Task{Script: lua.Renew, Args: renewArgs, Lost: ErrLockLost}

func renewArgs(lease time.Duration, chunk []*renewal.Entry) (keys, argv []string) {
	keys = make([]string, len(chunk))
	argv = make([]string, len(chunk)+1)
	argv[0] = ms(lease)
	for i, e := range chunk {
		keys[i] = e.Key
		argv[i+1] = e.Owner
	}
	return keys, argv
}

// Mutex is a reentrant lock shared with Redisson's RLock of the same name.
// See the package documentation for its guarantees. A Mutex holds no
// state of its own beyond its name: every Mutex of one name on one Client
// sees the same holds.
type Mutex struct {
	c       *interlock.Client
	name    string
	channel string
	err     error
}

// New returns the reentrant lock called name. A bad name or a nil client
// is not reported here but by every method, before anything is sent.
func New(c *interlock.Client, name string) *Mutex {
	m := &Mutex{c: c, name: name}
	switch err := keys.Check(name); {
	case c == nil:
		m.err = fmt.Errorf("%w: rlock: nil client", interlock.ErrInvalid)
	case err != nil:
		m.err = fmt.Errorf("%w: rlock: %w", interlock.ErrInvalid, err)
	default:
		m.channel = keys.LockChannel(name)
	}
	return m
}

// Name returns the lock's name, which is also its Redis key.
func (m *Mutex) Name() string { return m.name }

// Lock waits until the lock is acquired or ctx ends. The hold has no fixed
// lease: the Client's watchdog keeps it until Unlock, or until the process
// stops renewing it. On failure Lock returns ctx's error (errors.Is works)
// and leaves nothing held.
func (m *Mutex) Lock(ctx context.Context) error {
	_, err := m.acquire(ctx, 0, 0, true)
	return err
}

// LockLease is Lock with a fixed lease: the hold ends by itself when lease
// has passed, and is never renewed. lease must be at least a millisecond.
func (m *Mutex) LockLease(ctx context.Context, lease time.Duration) error {
	if lease < time.Millisecond {
		return fmt.Errorf("%w: rlock: lease %v must be at least 1ms", interlock.ErrInvalid, lease)
	}
	_, err := m.acquire(ctx, lease, 0, true)
	return err
}

// TryLock tries to acquire the lock for up to wait (0: a single attempt,
// with no subscription) and reports whether it did. A lease of 0 means a
// watchdog hold, as with Lock; otherwise the hold ends by itself after
// lease. A lock still busy when wait has passed is (false, nil); if ctx
// ends first, TryLock returns ctx's error.
func (m *Mutex) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	if wait < 0 || lease < 0 || (lease > 0 && lease < time.Millisecond) {
		return false, fmt.Errorf("%w: rlock: wait %v and lease %v must not be negative, and a lease at least 1ms", interlock.ErrInvalid, wait, lease)
	}
	return m.acquire(ctx, lease, wait, false)
}

// acquire runs the shared waiting algorithm (internal/wait): Redisson's
// try, confirmed subscribe, try, wait for a release message or the
// holder's TTL, loop; newcomers queue behind this process's parked waiters.
func (m *Mutex) acquire(ctx context.Context, lease, maxWait time.Duration, forever bool) (bool, error) {
	if m.err != nil {
		return false, m.err
	}
	owner, err := m.c.Owner(ctx)
	if err != nil {
		return false, err
	}
	spec := wait.Spec{
		Hub:      m.c.PubSub(),
		Channel:  m.channel,
		Forever:  forever,
		Deadline: time.Now().Add(maxWait),
		// An owner that already holds the lock re-enters at once.
		Queue: holds(m.c.Renewal().Lookup(m.name, owner)) == 0,
		Try: func(ctx context.Context) (bool, time.Duration, error) {
			ttl, ok, err := m.try(ctx, owner, lease)
			return ok, ms2d(ttl), err
		},
	}
	if forever || maxWait > 0 {
		if spec.Sharded, err = m.c.Sharded(ctx); err != nil {
			return false, m.opErr("acquire", err)
		}
	}
	ok, err := wait.Acquire(ctx, spec)
	if err != nil {
		return false, m.opErr("acquire", err)
	}
	return ok, nil
}

// try runs the acquire script once. It returns the holder's TTL in ms when
// another owner holds the lock.
func (m *Mutex) try(ctx context.Context, owner string, lease time.Duration) (ttl int64, ok bool, err error) {
	if m.c.Closed() {
		return 0, false, ErrClosed
	}
	leaseArg := lease
	if lease == 0 {
		leaseArg = m.c.WatchdogTimeout()
	}
	sent := time.Now()
	ttl, err = lua.Acquire.Exec(ctx, m.c.Redis(), []string{m.name}, []string{ms(leaseArg), owner}).AsInt64()
	switch {
	case err == nil:
		return ttl, false, nil
	case rueidis.IsRedisNil(err):
		if _, err := m.c.Renewal().Hold(m.name, owner, task, lease, sent); err != nil {
			m.undo(ctx, owner, 1)
			return 0, false, ErrClosed
		}
		return 0, true, nil
	}
	if _, isRedisErr := rueidis.IsRedisErr(err); !isRedisErr {
		// The script may have run and its reply been lost: take back what
		// it may have taken before reporting the failure.
		m.undo(ctx, owner, holds(m.c.Renewal().Lookup(m.name, owner))+1)
	}
	if ctx.Err() != nil {
		return 0, false, ctx.Err()
	}
	return 0, false, m.opErr("acquire", err)
}

// undo releases the hold a lost acquisition may have taken: if owner's
// count on the server is exactly what that acquisition would have made it.
func (m *Mutex) undo(ctx context.Context, owner string, expected int) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
	defer cancel()
	pub, err := m.c.PublishCommand(ctx)
	if err != nil {
		return
	}
	lua.UndoAcquire.Exec(ctx, m.c.Redis(), []string{m.name, m.channel}, []string{"0", owner, strconv.Itoa(expected), pub})
}

// Unlock releases one hold of the calling owner. The lock is released, and
// waiters here and in Java are woken, when the last hold is released. It
// returns an error wrapping ErrNotHeld when the owner holds nothing,
// including when its hold was lost.
//
// One Unlock is one logical unlock: when no reply comes back it resends
// the same request, which the server applies at most once.
func (m *Mutex) Unlock(ctx context.Context) error {
	if m.err != nil {
		return m.err
	}
	if m.c.Closed() {
		return ErrClosed
	}
	owner, err := m.c.Owner(ctx)
	if err != nil {
		return err
	}
	pub, err := m.c.PublishCommand(ctx)
	if err != nil {
		return m.opErr("unlock", err)
	}
	lease := m.c.WatchdogTimeout()
	outcome := renewal.Unknown
	if e := m.c.Renewal().Lookup(m.name, owner); e != nil {
		lease = e.BeginRelease()
		defer func() { e.EndRelease(outcome) }()
	}
	latch := keys.UnlockLatch(m.name, keys.RequestID())
	ks := []string{m.name, m.channel, latch}
	args := []string{"0", ms(lease), owner, pub, ms(latchTTL)}
	var res rueidis.RedisResult
	for attempt := 1; ; attempt++ {
		res = lua.Unlock.Exec(ctx, m.c.Redis(), ks, args)
		// Any reply from the server ends the loop, a nil one ("not held")
		// included: rueidis.IsRedisErr is false for rueidis.Nil.
		_, isRedisErr := rueidis.IsRedisErr(res.Error())
		replied := res.Error() == nil || isRedisErr || rueidis.IsRedisNil(res.Error())
		if replied || attempt == unlockAttempts || ctx.Err() != nil {
			break
		}
		if err := pause(ctx, time.Duration(attempt)*50*time.Millisecond); err != nil {
			break
		}
	}
	n, err := res.AsInt64()
	switch {
	case rueidis.IsRedisNil(err):
		outcome = renewal.NotHeld
		return fmt.Errorf("%w: %s", ErrNotHeld, m.name)
	case err != nil:
		m.c.DeleteLater(latch)
		return m.opErr("unlock", err)
	}
	m.c.DeleteLater(latch)
	if n == 1 {
		outcome = renewal.Released
	} else {
		outcome = renewal.Decremented
	}
	return nil
}

// ForceUnlock deletes the lock whoever holds it, wakes its waiters, and
// reports whether there was a lock to delete. Holds of this Client on it
// are lost: their guards are cancelled with ErrLockLost.
func (m *Mutex) ForceUnlock(ctx context.Context) (bool, error) {
	if m.err != nil {
		return false, m.err
	}
	if m.c.Closed() {
		return false, ErrClosed
	}
	pub, err := m.c.PublishCommand(ctx)
	if err != nil {
		return false, m.opErr("force unlock", err)
	}
	m.c.Renewal().Drop(m.name, ErrLockLost)
	n, err := lua.ForceUnlock.Exec(ctx, m.c.Redis(), []string{m.name, m.channel}, []string{"0", pub}).AsInt64()
	if err != nil {
		return false, m.opErr("force unlock", err)
	}
	return n == 1, nil
}

// IsLocked reports whether anyone holds the lock.
func (m *Mutex) IsLocked(ctx context.Context) (bool, error) {
	if m.err != nil {
		return false, m.err
	}
	n, err := m.c.Redis().Do(ctx, m.c.Redis().B().Exists().Key(m.name).Build()).AsInt64()
	if err != nil {
		return false, m.opErr("is locked", err)
	}
	return n == 1, nil
}

// IsHeld reports whether the calling owner holds the lock.
func (m *Mutex) IsHeld(ctx context.Context) (bool, error) {
	n, err := m.HoldCount(ctx)
	return n > 0, err
}

// HoldCount returns how many holds the calling owner has on the lock, as
// the server counts them (0 when it holds none).
func (m *Mutex) HoldCount(ctx context.Context) (int, error) {
	if m.err != nil {
		return 0, m.err
	}
	owner, err := m.c.Owner(ctx)
	if err != nil {
		return 0, err
	}
	n, err := m.c.Redis().Do(ctx, m.c.Redis().B().Hget().Key(m.name).Field(owner).Build()).AsInt64()
	switch {
	case rueidis.IsRedisNil(err):
		return 0, nil
	case err != nil:
		return 0, m.opErr("hold count", err)
	}
	return int(n), nil
}

// TTL returns how long the lock has left before it expires: 0 when it is
// not locked, a negative duration when it is locked with no expiry (which
// only a foreign writer can cause).
func (m *Mutex) TTL(ctx context.Context) (time.Duration, error) {
	if m.err != nil {
		return 0, m.err
	}
	n, err := m.c.Redis().Do(ctx, m.c.Redis().B().Pttl().Key(m.name).Build()).AsInt64()
	switch {
	case err != nil:
		return 0, m.opErr("ttl", err)
	case n == -2:
		return 0, nil
	case n < 0:
		return -1, nil
	}
	return time.Duration(n) * time.Millisecond, nil
}

// Guard returns a context derived from ctx that is cancelled when the
// calling owner's hold on the lock ends: with cause ErrLockLost when the
// lock is lost, with cause context.Canceled when Unlock releases it. Work
// done under the lock should check it (context.Cause tells the two apart).
// If the owner holds nothing, the returned context is already cancelled
// with a cause wrapping ErrNotHeld.
//
// A lock can be lost at any moment (a pause longer than the lease, a
// network partition, a failover that lost the key), and the guard learns
// of it only at the next renewal; protect writes with a fenced lock where
// that matters.
func (m *Mutex) Guard(ctx context.Context) context.Context {
	if m.err != nil {
		return cancelled(ctx, m.err)
	}
	owner, err := m.c.Owner(ctx)
	if err != nil {
		return cancelled(ctx, err)
	}
	e := m.c.Renewal().Lookup(m.name, owner)
	if e == nil {
		return cancelled(ctx, fmt.Errorf("%w: %s", ErrNotHeld, m.name))
	}
	return e.Guard(ctx)
}

func (m *Mutex) opErr(op string, err error) error {
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, pubsub.ErrClosed):
		return ErrClosed
	}
	return fmt.Errorf("rlock: %s %s: %w", op, m.name, err)
}

func cancelled(parent context.Context, cause error) context.Context {
	ctx, cancel := context.WithCancelCause(parent)
	cancel(cause)
	return ctx
}

func holds(e *renewal.Entry) int {
	if e == nil {
		return 0
	}
	return e.Holds()
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// ms2d converts a PTTL reply; a negative one (no TTL) stays negative.
func ms2d(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

// pause waits for d or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
