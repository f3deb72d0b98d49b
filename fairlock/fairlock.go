package fairlock

import (
	"time"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	lc "github.com/interlock-go/interlock/internal/lockcore"
	"github.com/interlock-go/interlock/lua"
)

// The kind's errors are the root's.
var (
	ErrNotHeld  = interlock.ErrNotHeld
	ErrLockLost = interlock.ErrLockLost
	ErrClosed   = interlock.ErrClosed
)

// DefaultWaitTimeout is how long a waiter keeps its place in the queue
// after the waiter before it was due (Redisson's fairLockWaitTimeout).
const DefaultWaitTimeout = 5 * time.Minute

// kind is Redisson's RFairLock: a reentrant lock whose waiters queue in
// redisson_lock_queue:{name}, with deadlines in redisson_lock_timeout:{name},
// each woken on redisson_lock__channel:{name}:<owner>.
var (
	queue, timeouts = lc.Key(0), lc.Key(1)
	kind            = lc.Kind{
		Name:    "fairlock",
		Channel: keys.LockChannel,
		Keys:    []func(string) string{lc.Prefixed("redisson_lock_queue"), lc.Prefixed("redisson_lock_timeout")},
		Acquire: lc.Call{Script: lua.FairAcquire, Keys: []lc.Arg{lc.Name, queue, timeouts}, Args: []lc.Arg{lc.Lease, lc.Owner, lc.Grace, lc.Now}},
		Fair: &lc.Fair{
			TryAcquire: lc.Call{Script: lua.FairTryAcquire, Keys: []lc.Arg{lc.Name, queue, timeouts}, Args: []lc.Arg{lc.Lease, lc.Owner, lc.Now, lc.Grace}},
			GiveUp:     lc.Call{Script: lua.FairAcquireFailed, Keys: []lc.Arg{queue, timeouts, lc.Name, lc.Channel}, Args: []lc.Arg{lc.Owner, lc.Grace, lc.Lit("0"), lc.Publish}},
		},
		Unlock: lc.Call{Script: lua.FairUnlock, Keys: []lc.Arg{lc.Name, queue, timeouts, lc.Channel, lc.Latch},
			Args: []lc.Arg{lc.Lit("0"), lc.Lease, lc.Owner, lc.Now, lc.Publish, lc.LatchTTL}},
		ExpiredReply: 2,
		Undo:         lc.Call{Script: lua.FairUndoAcquire, Keys: []lc.Arg{lc.Name, queue, timeouts, lc.Channel}, Args: []lc.Arg{lc.Lit("0"), lc.Owner, lc.Expected, lc.Publish, lc.Now}},
		Force:        lc.Call{Script: lua.FairForceUnlock, Keys: []lc.Arg{lc.Name, queue, timeouts, lc.Channel}, Args: []lc.Arg{lc.Lit("0"), lc.Now, lc.Publish}},
		Renew:        lc.RenewTask,
	}
)

// Option configures a Mutex.
type Option func(*options)

type options struct {
	waitTimeout time.Duration
	err         error
}

// WithWaitTimeout sets how long a waiter of Lock and LockLease keeps its
// place: its deadline is the previous waiter's (or the holder's remaining
// lease) plus d, as Redisson computes it. TryLock uses its wait instead.
// The default is DefaultWaitTimeout; d must be at least 1ms and should be
// the Java fleet's fairLockWaitTimeout (see the package documentation).
func WithWaitTimeout(d time.Duration) Option {
	return func(o *options) {
		if d < time.Millisecond && o.err == nil {
			o.err = kind.Invalid("wait timeout %v must be at least 1ms", d)
		}
		o.waitTimeout = d
	}
}

// Mutex is a fair, reentrant lock shared with Redisson's RFairLock of the
// same name: waiters acquire it in the order they started waiting. Its
// methods are interlock.Locker's; the package documentation states its
// policy.
type Mutex struct {
	lc.Common
}

var _ interlock.Locker = (*Mutex)(nil)

// New returns the fair lock called name. A bad name, a bad option or a nil
// client is reported by every method, before anything is sent.
func New(c *interlock.Client, name string, opts ...Option) *Mutex {
	o := options{waitTimeout: DefaultWaitTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	return &Mutex{lc.NewFair(c, &kind, name, o.waitTimeout, o.err)}
}
