package fenced

import (
	"context"
	"errors"
	"time"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/lockcore"
	"github.com/interlock-go/interlock/internal/report"
	"github.com/interlock-go/interlock/internal/script"
)

var (
	// ErrStale is wrapped by the error of Fence.Do and of RedisFence's
	// writes when they refuse a token older than one already admitted.
	ErrStale = errors.New("fenced: stale fencing token")
)

// kind is Redisson's RFencedLock: an RLock whose acquire script also takes
// a token from the counter redisson_lock_token:{name}.
var kind = func() lockcore.Kind {
	k := lockcore.Reentrant(string(interlock.KindFenced))
	k.Keys = []func(string) string{lockcore.Prefixed(keys.FenceTokenPrefix)}
	k.KeyShapes = []lockcore.Shape{lockcore.ShapeCount}
	k.Acquire = lockcore.Call{Script: script.FencedAcquire, Keys: []lockcore.Arg{lockcore.Name, lockcore.Key(0)},
		Args: []lockcore.Arg{lockcore.Lease, lockcore.Owner}}
	k.Reply = lockcore.ReplyToken
	k.Transfer = &lockcore.Call{Script: script.Transfer, Keys: []lockcore.Arg{lockcore.Name, lockcore.Latch, lockcore.Channel, lockcore.Key(0)},
		Args: []lockcore.Arg{lockcore.Lease, lockcore.Owner, lockcore.LatchTTL, lockcore.Next, lockcore.NextLease, lockcore.Publish, lockcore.Yield}}
	return k
}()

//go:generate go run ../internal/gen/locker Mutex

// Mutex is a reentrant lock that hands out a fencing token with every
// acquisition, shared with Redisson's RFencedLock of the same name. It has
// interlock.Locker's methods, plus those that return the token.
type Mutex struct {
	engine
}

var _ interlock.Locker = (*Mutex)(nil)

// New returns the fenced lock called name. A bad name or a nil client is
// reported by every method, before anything is sent.
func New(c *interlock.Client, name string) *Mutex {
	return &Mutex{lockcore.Embedded(lockcore.New(c, &kind, name))}
}

// LockToken is Lock, and returns the acquisition's token: larger than every
// token handed out for this name before.
func (m *Mutex) LockToken(ctx context.Context) (uint64, error) {
	token, _, err := lockcore.Acquire(ctx, m.core(), lockcore.Request{Forever: true})
	return token, err
}

// LockLeaseToken is LockLease, and returns the acquisition's token.
// (Redisson's lockAndGetToken(leaseTime, unit) takes a watchdog hold
// instead; this method honours the lease.)
func (m *Mutex) LockLeaseToken(ctx context.Context, lease time.Duration) (uint64, error) {
	if lease < time.Millisecond {
		return 0, m.core().Invalid(report.OpAcquire, "lease %v must be at least 1ms", lease)
	}
	token, _, err := lockcore.Acquire(ctx, m.core(), lockcore.Request{Lease: lease, Forever: true})
	return token, err
}

// TryLockToken is TryLock, and returns the acquisition's token; a lock
// still busy takes no token: (0, false, nil).
func (m *Mutex) TryLockToken(ctx context.Context, wait, lease time.Duration) (uint64, bool, error) {
	return lockcore.Acquire(ctx, m.core(), lockcore.Request{Lease: lease, Wait: wait})
}

// Token returns the lock's token counter: the token of the latest
// acquisition by any owner in any process, 0 when none was handed out.
// Keep the token LockToken returned for "this owner's token".
func (m *Mutex) Token(ctx context.Context) (uint64, error) {
	return lockcore.Token(ctx, m.core())
}

func invalid(format string, args ...any) error { return lockcore.Invalid(format, args...) }
