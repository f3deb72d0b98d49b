package nonreentrant

import (
	"errors"
	"time"

	"github.com/interlock-go/interlock"
	lc "github.com/interlock-go/interlock/internal/lockcore"
)

// The kind's errors: the root's, and the refused re-entry.
var (
	// ErrReentered is returned by an acquisition of a lock its owner
	// already holds. Its text carries Redisson's token, which Java's
	// Redisson recognises too.
	ErrReentered = errors.New("nonreentrant: lock already held by this owner (" + lc.ReenterToken + ")")
)

// The kinds: Redisson's RNonReentrantLock and RNonReentrantFairLock, the
// reentrant kinds whose acquire scripts are given the re-entry token, on
// which they refuse re-entry.
var (
	kind     = nonReentrant(lc.Reentrant(string(interlock.KindNonReentrant)))
	fairKind = nonReentrant(lc.FairKind(string(interlock.KindNonReentrantFair)))
)

func nonReentrant(k lc.Kind) lc.Kind {
	withToken := func(c lc.Call) lc.Call {
		c.Args = append(append([]lc.Arg(nil), c.Args...), lc.Lit(lc.ReenterToken))
		return c
	}
	k.Acquire = withToken(k.Acquire)
	if k.Fair != nil {
		k.Fair = &lc.Fair{TryAcquire: withToken(k.Fair.TryAcquire), GiveUp: k.Fair.GiveUp}
	}
	k.Reentered = ErrReentered
	return k
}

//go:generate go run ../internal/gen/locker Mutex FairMutex

// Mutex is a lock shared with Redisson's RNonReentrantLock of the same
// name, on the keys of RLock: an RLock or a Mutex holder of either
// language excludes it. Its methods are interlock.Locker's, except that an
// owner's second acquisition fails with ErrReentered.
type Mutex struct {
	engine
}

var _ interlock.Locker = (*Mutex)(nil)

// New returns the non-reentrant lock called name. A bad name or a nil
// client is reported by every method, before anything is sent.
func New(c *interlock.Client, name string) *Mutex {
	return &Mutex{lc.Embedded(lc.New(c, &kind, name))}
}

// DefaultWaitTimeout is how long a FairMutex waiter keeps its place in the
// queue after the waiter before it was due (Redisson's
// fairLockWaitTimeout), as for fairlock.
const DefaultWaitTimeout = 5 * time.Minute

// FairMutex is a lock shared with Redisson's RNonReentrantFairLock of the
// same name, on the keys of RFairLock: waiters acquire it in the order
// they started waiting (see the fairlock package), and an owner's second
// acquisition fails with ErrReentered, without queueing.
type FairMutex struct {
	engine
}

var _ interlock.Locker = (*FairMutex)(nil)

// FairOption configures a FairMutex.
type FairOption func(*fairOptions)

type fairOptions struct{ wait lc.FairWait }

// WithWaitTimeout sets how long a waiter of Lock and LockLease keeps its
// place, as fairlock.WithWaitTimeout does. The default is
// DefaultWaitTimeout; d must be at least 1ms and should be the Java
// fleet's fairLockWaitTimeout.
func WithWaitTimeout(d time.Duration) FairOption {
	return func(o *fairOptions) { o.wait.Set(d) }
}

// NewFair returns the non-reentrant fair lock called name. A bad name, a
// bad option or a nil client is reported by every method, before anything
// is sent.
func NewFair(c *interlock.Client, name string, opts ...FairOption) *FairMutex {
	o := fairOptions{lc.FairWait{Timeout: DefaultWaitTimeout}}
	for _, opt := range opts {
		opt(&o)
	}
	return &FairMutex{lc.Embedded(lc.NewFair(c, &fairKind, name, o.wait))}
}
