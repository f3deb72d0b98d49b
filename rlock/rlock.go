package rlock

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/lockcore"
	"github.com/interlock-go/interlock/internal/wait"
	"github.com/interlock-go/interlock/lua"
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

// kind tells the shared lock core about this package.
var kind = &lockcore.Kind{
	Name:    "rlock",
	NotHeld: ErrNotHeld,
	Lost:    ErrLockLost,
	Task:    &renewal.Task{Script: lua.Renew(), Args: lockcore.RenewArgs, Lost: ErrLockLost},
}

// Mutex is a reentrant lock shared with Redisson's RLock of the same name.
// See the package documentation for its guarantees. A Mutex holds no
// state of its own beyond its name: every Mutex of one name on one Client
// sees the same holds.
type Mutex struct {
	l       lockcore.Lock
	channel string
}

// New returns the reentrant lock called name. A bad name or a nil client
// is not reported here but by every method, before anything is sent.
func New(c *interlock.Client, name string) *Mutex {
	return &Mutex{l: lockcore.New(c, kind, name), channel: keys.LockChannel(name)}
}

// Name returns the lock's name, which is also its Redis key.
func (m *Mutex) Name() string { return m.l.Name }

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
		return invalid("lease %v must be at least 1ms", lease)
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
		return false, invalid("wait %v and lease %v must not be negative, and a lease at least 1ms", wait, lease)
	}
	return m.acquire(ctx, lease, wait, false)
}

// acquire runs the shared waiting algorithm (internal/wait): Redisson's
// try, confirmed subscribe, try, wait for a release message or the
// holder's TTL, loop; newcomers queue behind this process's parked waiters.
func (m *Mutex) acquire(ctx context.Context, lease, maxWait time.Duration, forever bool) (bool, error) {
	if err := m.l.Ready(); err != nil {
		return false, err
	}
	owner, err := m.l.C.Owner(ctx)
	if err != nil {
		return false, err
	}
	spec := wait.Spec{
		Hub:      m.l.C.PubSub(),
		Channel:  m.channel,
		Forever:  forever,
		Deadline: time.Now().Add(maxWait),
		// An owner that already holds the lock re-enters at once.
		Queue: m.l.Holds(owner) == 0,
		Try: func(ctx context.Context) (bool, time.Duration, error) {
			return m.try(ctx, owner, lease)
		},
	}
	if forever || maxWait > 0 {
		if spec.Sharded, err = m.l.C.Sharded(ctx); err != nil {
			return false, m.l.OpErr("acquire", err)
		}
	}
	ok, err := wait.Acquire(ctx, spec)
	if err != nil {
		return false, m.l.OpErr("acquire", err)
	}
	return ok, nil
}

// try runs the acquire script once.
func (m *Mutex) try(ctx context.Context, owner string, lease time.Duration) (bool, time.Duration, error) {
	leaseArg := lease
	if lease == 0 {
		leaseArg = m.l.C.WatchdogTimeout()
	}
	return m.l.Attempt(ctx, owner, lease,
		func(ctx context.Context, exec lockcore.Exec) rueidis.RedisResult {
			return exec(ctx, lua.Acquire(), []string{m.l.Name}, []string{lockcore.MS(leaseArg), owner})
		},
		func(r rueidis.RedisResult) (bool, time.Duration, error) {
			ttl, err := r.AsInt64()
			if rueidis.IsRedisNil(err) {
				return true, 0, nil
			}
			return false, lockcore.Millis(ttl), err
		},
		func(ctx context.Context, expected int) error { return m.undo(ctx, owner, expected) })
}

// undo releases the hold a lost acquisition may have taken: if owner's
// count on the server is exactly what that acquisition would have made it.
func (m *Mutex) undo(ctx context.Context, owner string, expected int) error {
	pub, err := m.l.C.PublishCommand(ctx)
	if err != nil {
		return err
	}
	return lockcore.Done(lua.UndoAcquire().Exec(ctx, m.l.C.Redis(), []string{m.l.Name, m.channel}, []string{"0", owner, strconv.Itoa(expected), pub}))
}

// Unlock releases one hold of the calling owner. The lock is released, and
// waiters here and in Java are woken, when the last hold is released. It
// returns an error wrapping ErrNotHeld when the owner holds nothing,
// including when its hold was lost.
//
// One Unlock is one logical unlock: when no reply comes back it resends
// the same request, for up to 5 s while ctx lives, and the server applies
// it at most once. With interlock.WithReplicaAcks, a release too few
// replicas acknowledged still counts, and the error wraps
// interlock.ErrReplication. After the Client's max hold time
// (interlock.WithMaxHold) ended the hold, the error also wraps
// ErrLockLost and interlock.ErrMaxHold when the key is gone.
func (m *Mutex) Unlock(ctx context.Context) error {
	if err := m.l.Ready(); err != nil {
		return err
	}
	owner, err := m.l.C.Owner(ctx)
	if err != nil {
		return err
	}
	_, err = m.l.Unlock(ctx, owner, func(ctx context.Context, exec lockcore.Exec, latch string, lease time.Duration, pub string) rueidis.RedisResult {
		return exec(ctx, lua.Unlock(),
			[]string{m.l.Name, m.channel, latch},
			[]string{"0", lockcore.MS(lease), owner, pub, lockcore.MS(lockcore.LatchTTL)})
	})
	return err
}

// ForceUnlock deletes the lock whoever holds it, wakes its waiters, and
// reports whether there was a lock to delete. Holds of this Client on it
// are lost: their guards are cancelled with ErrLockLost.
func (m *Mutex) ForceUnlock(ctx context.Context) (bool, error) {
	if err := m.l.Ready(); err != nil {
		return false, err
	}
	pub, err := m.l.C.PublishCommand(ctx)
	if err != nil {
		return false, m.l.OpErr("force unlock", err)
	}
	m.l.C.Renewal().Drop(m.l.Name, ErrLockLost)
	n, err := lua.ForceUnlock().Exec(ctx, m.l.C.Redis(), []string{m.l.Name, m.channel}, []string{"0", pub}).AsInt64()
	if err != nil {
		return false, m.l.OpErr("force unlock", err)
	}
	return n == 1, nil
}

// IsLocked reports whether anyone holds the lock.
func (m *Mutex) IsLocked(ctx context.Context) (bool, error) {
	return m.l.Exists(ctx)
}

// IsHeld reports whether the calling owner holds the lock.
func (m *Mutex) IsHeld(ctx context.Context) (bool, error) {
	n, err := m.HoldCount(ctx)
	return n > 0, err
}

// HoldCount returns how many holds the calling owner has on the lock, as
// the server counts them (0 when it holds none).
func (m *Mutex) HoldCount(ctx context.Context) (int, error) {
	return m.l.HoldCount(ctx, "")
}

// TTL returns how long the lock has left before it expires: 0 when it is
// not locked, a negative duration when it is locked with no expiry (which
// only a foreign writer can cause).
func (m *Mutex) TTL(ctx context.Context) (time.Duration, error) {
	return m.l.TTL(ctx)
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
	return m.l.Guard(ctx, "")
}

// Remaining returns how long the calling owner's hold on the lock is still
// certainly valid: the lease set by the last successful acquisition or
// renewal, counted from when that request was sent (on the monotonic
// clock), minus the time since. It is 0 when the owner holds nothing here,
// or its hold was lost, ended by the Client's max hold time, or expired.
// It sends nothing and costs a map lookup, so call it before each step of
// protected work: go on only while it exceeds what the step may take. It
// says nothing about a pause that happens after it returns; fence writes
// where that matters.
func (m *Mutex) Remaining(ctx context.Context) time.Duration {
	return m.l.Remaining(ctx, "")
}

func invalid(format string, args ...any) error { return kind.Invalid(format, args...) }
