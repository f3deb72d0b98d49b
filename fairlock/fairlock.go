package fairlock

import (
	"time"

	"github.com/interlock-go/interlock"
	lc "github.com/interlock-go/interlock/internal/lockcore"
)

// DefaultWaitTimeout is how long a waiter keeps its place in the queue
// after the waiter before it was due (Redisson's fairLockWaitTimeout).
const DefaultWaitTimeout = 5 * time.Minute

// kind is Redisson's RFairLock, as the engine runs it.
var kind = lc.FairKind(string(interlock.KindFairLock))

// Option configures a Mutex.
type Option func(*options)

type options struct{ wait lc.FairWait }

// WithWaitTimeout sets how long a waiter of Lock and LockLease keeps its
// place: its deadline is the previous waiter's (or the holder's remaining
// lease) plus d, as Redisson computes it. TryLock uses its wait instead.
// The default is DefaultWaitTimeout; d must be at least 1ms and should be
// the Java fleet's fairLockWaitTimeout (see the package documentation).
func WithWaitTimeout(d time.Duration) Option {
	return func(o *options) { o.wait.Set(d) }
}

//go:generate go run ../internal/gen/locker Mutex

// Mutex is a fair, reentrant lock shared with Redisson's RFairLock of the
// same name: waiters acquire it in the order they started waiting. Its
// methods are interlock.Locker's; the package documentation states its
// policy.
type Mutex struct {
	engine
}

var _ interlock.Locker = (*Mutex)(nil)

// New returns the fair lock called name. A bad name, a bad option or a nil
// client is reported by every method, before anything is sent.
func New(c *interlock.Client, name string, opts ...Option) *Mutex {
	o := options{lc.FairWait{Timeout: DefaultWaitTimeout}}
	for _, opt := range opts {
		opt(&o)
	}
	return &Mutex{lc.Embedded(lc.NewFair(c, &kind, name, o.wait))}
}
