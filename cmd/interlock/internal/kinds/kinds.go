// Package kinds names the kinds of Redisson synchronizer the way
// interlock's commands do, in --kind and in the KIND column of inspect and
// ls, makes the lock of each lock kind, and releases a hold whatever
// became of the caller's context.
package kinds

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/fenced"
	"github.com/interlock-go/interlock/rlock"
	"github.com/interlock-go/interlock/rwlock"
	"github.com/interlock-go/interlock/spin"
)

// The kinds --kind names.
const (
	// Reentrant is rlock: Redisson's RLock.
	Reentrant = "reentrant"
	// Fair is fairlock: RFairLock.
	Fair = "fair"
	// Read is rwlock's read half: RReadWriteLock.readLock().
	Read = "read"
	// Write is rwlock's write half: RReadWriteLock.writeLock().
	Write = "write"
	// Fenced is fenced: RFencedLock.
	Fenced = "fenced"
	// Spin is spin: RSpinLock, on RLock's hash (run only).
	Spin = "spin"
	// Semaphore is semaphore.Semaphore: RSemaphore.
	Semaphore = "semaphore"
	// Expirable is semaphore.Expirable: RPermitExpirableSemaphore.
	Expirable = "expirable-semaphore"
	// Latch is latch.Latch: RCountDownLatch.
	Latch = "latch"
	// RateLimit is ratelimit.Limiter: RRateLimiter.
	RateLimit = "ratelimit"
)

// The kinds inspect and ls name besides those of --kind.
const (
	// ReadWrite is a RedissonReadWriteLock, either half.
	ReadWrite = "read/write"
	// Counter is a string key holding an integer and nothing beside it:
	// an RSemaphore and an RCountDownLatch are stored the same way (so is
	// an RPermitExpirableSemaphore with no permit acquired).
	Counter = "semaphore/latch"
	// None is a name with nothing under it in Redis.
	None = "none"
	// Unknown is a key that is no Redisson synchronizer.
	Unknown = "unknown"
)

// Locks are the lock kinds, in the order the help lists them: the values
// of unlock's --kind. Callers must not modify it.
var Locks = []string{Reentrant, Fair, Read, Write, Fenced}

// IsLock reports whether kind is one of the lock kinds (Locks, or Spin).
func IsLock(kind string) bool {
	return kind == Spin || slices.Contains(Locks, kind)
}

// IsSemaphore reports whether kind is one of the semaphore kinds.
func IsSemaphore(kind string) bool {
	return kind == Semaphore || kind == Expirable
}

// NewLock returns the lock of kind (one of Locks, or Spin) called name.
func NewLock(c *interlock.Client, kind, name string) (interlock.Locker, error) {
	switch kind {
	case Reentrant:
		return rlock.New(c, name), nil
	case Fair:
		// TryLock's wait is also the grace of the waiter in the queue;
		// Lock and LockLease queue with the default, Redisson's 5 minutes.
		return fairlock.New(c, name), nil
	case Read:
		return rwlock.New(c, name).Read(), nil
	case Write:
		return rwlock.New(c, name).Write(), nil
	case Fenced:
		return fenced.New(c, name), nil
	case Spin:
		return spin.New(c, name), nil
	}
	return nil, errors.New("unknown lock kind " + strconv.Quote(kind))
}

// UnlockTimeout bounds Release.
const UnlockTimeout = 5 * time.Second

// Release calls unlock, a hold's release, on a context with ctx's values but
// not its cancellation, for at most UnlockTimeout, so that a hold is released
// even after its wait or work was cancelled; it returns unlock's error.
func Release(ctx context.Context, unlock func(context.Context) error) error {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), UnlockTimeout)
	defer cancel()
	return unlock(uctx)
}
