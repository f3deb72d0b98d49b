package rlock

import (
	"time"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/lockcore"
)

// kind is Redisson's RLock, as the engine runs it.
var kind = lockcore.Reentrant(string(interlock.KindRLock))

//go:generate go run ../internal/gen/locker Mutex

// Mutex is a reentrant lock shared with Redisson's RLock of the same name.
// Its methods are interlock.Locker's. It holds nothing but its name: every
// Mutex of one name on one Client sees the same holds.
type Mutex struct {
	engine
}

var _ interlock.Locker = (*Mutex)(nil)

// Option configures a Mutex.
type Option func(*options)

type options struct {
	poll time.Duration // 0: no poll
	err  error
}

// WithPollInterval makes waiters try again at least every d, even without
// a release message. Redisson's spin lock shares RLock's data but
// announces no release: a Go RLock waiter on a name that Java also takes
// as a spin lock would otherwise wait out the holder's TTL. d must be at
// least 1ms.
func WithPollInterval(d time.Duration) Option {
	return func(o *options) {
		if d < time.Millisecond && o.err == nil {
			o.err = lockcore.Invalid("poll interval %v must be at least 1ms", d)
		}
		o.poll = d
	}
}

// New returns the reentrant lock called name. A bad name, a bad option or
// a nil client is reported by every method, before anything is sent.
func New(c *interlock.Client, name string, opts ...Option) *Mutex {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	m := &Mutex{lockcore.Embedded(lockcore.New(c, &kind, name))}
	switch {
	case o.err != nil:
		m.core().Refuse(o.err)
	case o.poll > 0:
		lockcore.PollEvery(m.core(), o.poll)
	}
	return m
}
