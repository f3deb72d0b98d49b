package interlock

import (
	"context"
	"time"
)

// Locker is the method set every lock kind has: rlock.Mutex,
// fairlock.Mutex, the halves of rwlock.Mutex, fenced.Mutex, the
// nonreentrant and spin locks, and multilock.Mutex. Its contracts hold for
// every kind; a kind's package documents what it adds (a multi-lock, how
// its members add up).
type Locker interface {
	// Name returns the lock's name as given: its Redis key, unless the
	// Client maps names (interlock.WithNameMapper).
	Name() string
	// Lock waits until the lock is acquired or ctx ends, and takes a
	// watchdog hold (see "Holds" in package interlock). On failure it
	// returns ctx's error and leaves nothing held; a ctx that has ended
	// already sends nothing.
	Lock(ctx context.Context) error
	// LockLease is Lock with a fixed lease of at least 1ms: the hold ends
	// by itself when lease has passed and is never renewed.
	LockLease(ctx context.Context, lease time.Duration) error
	// TryLock tries for up to wait (0: one attempt, no subscription) and
	// reports whether it acquired; lease 0 is a watchdog hold. Still busy
	// when wait has passed is (false, nil); an ended ctx is ctx's error.
	TryLock(ctx context.Context, wait, lease time.Duration) (bool, error)
	// Extend gives the calling owner's hold a new lease of at least 1ms
	// from now, set atomically while the owner still holds the lock
	// (Remaining and Guard's deadline follow), or fails with ErrNotHeld. A
	// watchdog hold is renewed at once instead and stays one (see "Holds").
	Extend(ctx context.Context, lease time.Duration) error
	// Unlock releases one hold of the calling owner, and the lock with the
	// last one, waking waiters here and in Java. Given a ctx that has
	// already ended (a deferred Unlock of a finished request), it still
	// releases, on ctx's values alone, for up to 5s. An owner that
	// holds nothing gets an error wrapping ErrNotHeld, naming the owners
	// this Client holds the lock for. Without an answer it returns the
	// connection's error and stops counting the hold, which ends with its
	// validity (or the owner's other holds) unless a retry answers first.
	Unlock(ctx context.Context) error
	// ForceUnlock deletes the lock whoever holds it, as Redisson's does,
	// wakes its waiters and reports whether there was one to delete; this
	// Client's holds on it are lost. A key that holds no lock (another
	// type, or a hash of other fields) is left as it is (ErrInvalid).
	ForceUnlock(ctx context.Context) (bool, error)
	// Guard returns a context that ends with the calling owner's hold:
	// cause ErrLockLost when lost, context.Canceled when released, a cause
	// wrapping ErrNotHeld at once when nothing is held. Guards of a ctx
	// that never ends share one registration, so repeated calls keep
	// nothing; a guard of any other ctx is forgotten when ctx ends.
	Guard(ctx context.Context) context.Context
	// Remaining returns how long the calling owner's hold is still
	// certainly valid, 0 when none is. It sends nothing.
	Remaining(ctx context.Context) time.Duration
	// IsLocked reports whether anyone holds the lock.
	IsLocked(ctx context.Context) (bool, error)
	// IsHeld reports whether the calling owner holds the lock.
	IsHeld(ctx context.Context) (bool, error)
	// HoldCount returns the calling owner's holds as the server counts
	// them, 0 when it holds none.
	HoldCount(ctx context.Context) (int, error)
	// TTL returns the lock's time to live: 0 when it is not locked,
	// interlock.NoExpiry (-1) when its key never expires (only a foreign
	// writer leaves it so).
	TTL(ctx context.Context) (time.Duration, error)
}

// NoExpiry is the time to live of what never expires: every TTL method
// (Locker.TTL, a semaphore's) returns it for a key that exists without an
// expiry (Redis's PTTL -1), and an expirable permit acquired with it as
// its lease never expires (semaphore.NoExpiry, Redisson's -1; LeaseLeft
// returns it). A TTL of 0 means there is no key; a positive one is the
// time left.
const NoExpiry time.Duration = -1
