package fenced

import (
	"context"
	"errors"
	"fmt"
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
	ErrNotHeld = errors.New("fenced: lock not held by this owner")
	// ErrLockLost is the cause of a Guard's cancellation when the lock was
	// lost: its key vanished or was force-unlocked, renewal failed for a
	// whole lease, or an explicit lease ran out before Unlock.
	ErrLockLost = errors.New("fenced: lock lost")
	// ErrClosed is returned once the Client is closed.
	ErrClosed = interlock.ErrClosed
	// ErrStale is returned by Fence.Do when it refuses a token older than
	// one it has already admitted.
	ErrStale = errors.New("fenced: stale fencing token")
)

// tokenPrefix names the counter Redisson keeps next to a fenced lock.
const tokenPrefix = "redisson_lock_token"

// undoTimeout bounds the clean-up of an acquisition that handed out a
// token this package cannot use.
const undoTimeout = time.Second

// kind tells the shared lock core about this package. Holds are renewed
// with the reentrant lock's script, as Redisson's fenced lock does.
var kind = &lockcore.Kind{
	Name:    "fenced",
	NotHeld: ErrNotHeld,
	Lost:    ErrLockLost,
	Task:    &renewal.Task{Script: lua.Renew(), Args: lockcore.RenewArgs, Lost: ErrLockLost},
}

// Mutex is a reentrant lock that hands out a fencing token with every
// acquisition, shared with Redisson's RFencedLock of the same name. See the
// package documentation for its guarantees. A Mutex holds no state of its
// own beyond its name: every Mutex of one name on one Client sees the same
// holds.
type Mutex struct {
	l        lockcore.Lock
	channel  string
	tokenKey string
}

// New returns the fenced lock called name. A bad name or a nil client is
// not reported here but by every method, before anything is sent.
func New(c *interlock.Client, name string) *Mutex {
	return &Mutex{
		l:        lockcore.New(c, kind, name),
		channel:  keys.LockChannel(name),
		tokenKey: keys.Prefix(tokenPrefix, name),
	}
}

// Name returns the lock's name, which is also its Redis key.
func (m *Mutex) Name() string { return m.l.Name }

// LockToken waits until the lock is acquired or ctx ends, and returns the
// fencing token of this acquisition: larger than every token handed out
// for this lock name before. The hold has no fixed lease: the Client's
// watchdog keeps it until Unlock, or until the process stops renewing it.
// On failure LockToken returns ctx's error (errors.Is works) and leaves
// nothing held.
func (m *Mutex) LockToken(ctx context.Context) (uint64, error) {
	token, _, err := m.acquire(ctx, 0, 0, true)
	return token, err
}

// Lock is LockToken without the token. The acquisition still takes a
// token from the counter, as Redisson's lock() does; Token reads it.
func (m *Mutex) Lock(ctx context.Context) error {
	_, _, err := m.acquire(ctx, 0, 0, true)
	return err
}

// LockLeaseToken is LockToken with a fixed lease: the hold ends by itself
// when lease has passed, and is never renewed. lease must be at least a
// millisecond. (Redisson's lockAndGetToken(leaseTime, unit) ignores its
// lease and takes a watchdog hold; this method honours it.)
func (m *Mutex) LockLeaseToken(ctx context.Context, lease time.Duration) (uint64, error) {
	if lease < time.Millisecond {
		return 0, invalid("lease %v must be at least 1ms", lease)
	}
	token, _, err := m.acquire(ctx, lease, 0, true)
	return token, err
}

// LockLease is LockLeaseToken without the token.
func (m *Mutex) LockLease(ctx context.Context, lease time.Duration) error {
	_, err := m.LockLeaseToken(ctx, lease)
	return err
}

// TryLockToken tries to acquire the lock for up to wait (0: a single
// attempt, with no subscription), and reports whether it did, with the
// acquisition's fencing token. A lease of 0 means a watchdog hold, as with
// LockToken; otherwise the hold ends by itself after lease. A lock still
// busy when wait has passed is (0, false, nil) and takes no token; if ctx
// ends first, TryLockToken returns ctx's error.
func (m *Mutex) TryLockToken(ctx context.Context, wait, lease time.Duration) (uint64, bool, error) {
	if wait < 0 || lease < 0 || (lease > 0 && lease < time.Millisecond) {
		return 0, false, invalid("wait %v and lease %v must not be negative, and a lease at least 1ms", wait, lease)
	}
	return m.acquire(ctx, lease, wait, false)
}

// TryLock is TryLockToken without the token.
func (m *Mutex) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	_, ok, err := m.TryLockToken(ctx, wait, lease)
	return ok, err
}

// acquire runs the shared waiting algorithm (internal/wait) with the
// fenced acquire script, and returns the token of the attempt that
// acquired.
func (m *Mutex) acquire(ctx context.Context, lease, maxWait time.Duration, forever bool) (uint64, bool, error) {
	if err := m.l.Ready(); err != nil {
		return 0, false, err
	}
	owner, err := m.l.C.Owner(ctx)
	if err != nil {
		return 0, false, err
	}
	var (
		token uint64
		tried error // the last attempt's error, already wrapped
	)
	spec := wait.Spec{
		Hub:      m.l.C.PubSub(),
		Channel:  m.channel,
		Forever:  forever,
		Deadline: time.Now().Add(maxWait),
		// An owner that already holds the lock re-enters at once.
		Queue: m.l.Holds(owner) == 0,
		Try: func(ctx context.Context) (ok bool, retryIn time.Duration, err error) {
			ok, retryIn, tried = m.try(ctx, owner, lease, &token)
			return ok, retryIn, tried
		},
	}
	if forever || maxWait > 0 {
		if spec.Sharded, err = m.l.C.Sharded(ctx); err != nil {
			return 0, false, m.l.OpErr("acquire", err)
		}
	}
	ok, err := wait.Acquire(ctx, spec)
	switch {
	case err == nil:
		return token, ok, nil
	case err == tried:
		return 0, false, err
	}
	return 0, false, m.l.OpErr("acquire", err)
}

// try runs the acquire script once; when it acquires, *token is set.
func (m *Mutex) try(ctx context.Context, owner string, lease time.Duration, token *uint64) (bool, time.Duration, error) {
	leaseArg := lease
	if lease == 0 {
		leaseArg = m.l.C.WatchdogTimeout()
	}
	return m.l.Attempt(ctx, owner, lease,
		func(ctx context.Context, exec lockcore.Exec) rueidis.RedisResult {
			return exec(ctx, lua.FencedAcquire(),
				[]string{m.l.Name, m.tokenKey}, []string{lockcore.MS(leaseArg), owner})
		},
		func(r rueidis.RedisResult) (bool, time.Duration, error) {
			return m.parse(ctx, owner, r, token)
		},
		func(ctx context.Context, expected int) error {
			_, err := m.undo(ctx, owner, expected)
			return err
		})
}

// parse reads the acquire script's reply: {-1, token} acquired, {pttl, -1}
// busy. Only keys written by something other than a lock client give
// anything else. {-1, -1} means either busy on a lock hash without a TTL,
// or acquired with token -1 from a counter that had been set to -2; any
// other token below 1 is an acquisition with a token no fence can use.
// The count-checked undo tells them apart: it releases the hold only if
// the attempt took one, which then fails with an error.
func (m *Mutex) parse(ctx context.Context, owner string, r rueidis.RedisResult, token *uint64) (bool, time.Duration, error) {
	reply, err := r.AsIntSlice()
	if err == nil && len(reply) != 2 {
		err = fmt.Errorf("acquire script answered %d values, want 2", len(reply))
	}
	if err != nil {
		return false, 0, m.l.OpErr("acquire", err)
	}
	pttl, t := reply[0], reply[1]
	switch {
	case pttl == -1 && t >= 1:
		*token = uint64(t)
		return true, 0, nil
	case t == -1 && pttl != -1:
		return false, lockcore.Millis(pttl), nil
	}
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
	defer cancel()
	took, err := m.undo(uctx, owner, m.l.Holds(owner)+1)
	switch {
	case err != nil:
		return false, 0, m.l.OpErr("acquire", fmt.Errorf("unclear reply {%d, %d}, and taking it back failed: %w", pttl, t, err))
	case t == -1 && !took:
		return false, -1, nil // busy, and the lock has no TTL: wait for a message
	}
	return false, 0, m.l.OpErr("acquire", fmt.Errorf("the token counter %s gave token %d; fencing tokens start at 1 (was the key overwritten?)", m.tokenKey, t))
}

// undo releases the hold an acquisition may have taken: if owner's count
// on the server is exactly what that acquisition would have made it. It
// reports whether it released one. The token the acquisition took stays
// taken: tokens only need to increase, so a skipped one is harmless.
func (m *Mutex) undo(ctx context.Context, owner string, expected int) (bool, error) {
	pub, err := m.l.C.PublishCommand(ctx)
	if err != nil {
		return false, err
	}
	n, err := lua.UndoAcquire().Exec(ctx, m.l.C.Redis(), []string{m.l.Name, m.channel},
		[]string{"0", owner, strconv.Itoa(expected), pub}).AsInt64()
	if rueidis.IsRedisNil(err) {
		return false, nil
	}
	return n == 1, err
}

// Unlock releases one hold of the calling owner. The lock is released, and
// waiters here and in Java are woken, when the last hold is released. It
// returns an error wrapping ErrNotHeld when the owner holds nothing,
// including when its hold was lost. The token counter is never touched.
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
// are lost: their guards are cancelled with ErrLockLost. The token counter
// is kept (Redisson's delete() removes it as well, which restarts tokens
// at 1; interlock offers no such call).
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

// Token returns the lock's token counter: the token of the latest
// acquisition by any owner in any process, or 0 when none was ever handed
// out. It is not "this owner's token" (another owner may have acquired
// since); keep the token LockToken returned instead.
func (m *Mutex) Token(ctx context.Context) (uint64, error) {
	if m.l.Err != nil {
		return 0, m.l.Err
	}
	rc := m.l.C.Redis()
	s, err := rc.Do(ctx, rc.B().Get().Key(m.tokenKey).Build()).ToString()
	switch {
	case rueidis.IsRedisNil(err):
		return 0, nil
	case err != nil:
		return 0, m.l.OpErr("token", err)
	}
	t, err := strconv.ParseUint(s, 10, 64)
	if err != nil || t == 0 {
		return 0, m.l.OpErr("token", fmt.Errorf("%s holds %q, not a fencing token", m.tokenKey, s))
	}
	return t, nil
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
// lock is lost, with cause context.Canceled when Unlock releases it. If the
// owner holds nothing, the returned context is already cancelled with a
// cause wrapping ErrNotHeld.
//
// The guard learns of a loss at the next renewal at the earliest, and not
// at all while this process is paused: a guard that was fine before a
// write is no proof that the lock was still held when the write arrived.
// That is what the token is for: send it with the write and have the
// resource refuse stale ones (Fence, RedisFence).
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
