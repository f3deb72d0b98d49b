package spin

import (
	"math/rand/v2"
	"time"

	"github.com/interlock-go/interlock"
	lc "github.com/interlock-go/interlock/internal/lockcore"
)

// kind is Redisson's RSpinLock: RLock's hash and scripts. Its waiters poll
// (see Mutex), and its unlock publishes RLock's release message, which
// Redisson's spin unlock does not: see the package documentation.
var kind = lc.Reentrant(string(interlock.KindSpin))

// The backoff Redisson's LockOptions.defaults() gives a spin lock.
const (
	DefaultInitialDelay = time.Millisecond
	DefaultMaxDelay     = 128 * time.Millisecond
	DefaultMultiplier   = 2
	// DefaultConstantDelay is Redisson's ConstantBackOff's delay.
	DefaultConstantDelay = 64 * time.Millisecond
)

// Option configures a Mutex.
type Option func(*options)

type options struct {
	backoff func() func() time.Duration
	err     error
}

// WithExponentialBackoff makes waiters pause initial, then about
// multiplier times longer after each failed attempt (plus a random 0 to n
// ms after the n-th), up to max, as Redisson's ExponentialBackOff. It is
// the default, with 1ms, 128ms and 2.
func WithExponentialBackoff(initial, max time.Duration, multiplier int) Option {
	return func(o *options) {
		switch {
		case initial < time.Millisecond || max < initial:
			o.fail(lc.Invalid("backoff from %v to %v: want 1ms <= initial <= max", initial, max))
		case multiplier < 1:
			o.fail(lc.Invalid("backoff multiplier %d must be at least 1", multiplier))
		}
		o.backoff = exponential(initial, max, multiplier)
	}
}

// WithConstantBackoff makes waiters pause d between attempts, as
// Redisson's ConstantBackOff (64ms by default there).
func WithConstantBackoff(d time.Duration) Option {
	return func(o *options) {
		if d < time.Millisecond {
			o.fail(lc.Invalid("backoff %v must be at least 1ms", d))
		}
		o.backoff = func() func() time.Duration { return func() time.Duration { return d } }
	}
}

func (o *options) fail(err error) {
	if o.err == nil {
		o.err = err
	}
}

// exponential is Redisson's ExponentialBackOff: a fresh sequence per
// acquisition, 1, 2, 4-5, 8-12, ... ms up to max with the defaults.
func exponential(initial, max time.Duration, multiplier int) func() func() time.Duration {
	return func() func() time.Duration {
		next, fails := initial, 0
		return func() time.Duration {
			if next >= max {
				return max
			}
			d := next
			fails++
			next = min(max, next*time.Duration(multiplier)+time.Duration(rand.IntN(fails))*time.Millisecond)
			return d
		}
	}
}

//go:generate go run ../internal/gen/locker Mutex

// Mutex is a reentrant lock shared with Redisson's RSpinLock of the same
// name, on RLock's hash: an RLock, a spin lock or a non-reentrant lock of
// one name exclude each other, in either language. Its methods are
// interlock.Locker's; its waiters poll with backoff instead of
// subscribing.
type Mutex struct {
	engine
}

var _ interlock.Locker = (*Mutex)(nil)

// New returns the spin lock called name. A bad name, a bad option or a
// nil client is reported by every method, before anything is sent.
func New(c *interlock.Client, name string, opts ...Option) *Mutex {
	o := options{backoff: exponential(DefaultInitialDelay, DefaultMaxDelay, DefaultMultiplier)}
	for _, opt := range opts {
		opt(&o)
	}
	return &Mutex{lc.Embedded(lc.NewSpin(c, &kind, name, o.backoff, o.err))}
}
