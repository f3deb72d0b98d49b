package interlock

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/interlock-go/interlock/renewal"
)

// Defaults, the same as Redisson's.
const (
	// DefaultWatchdogTimeout is the lease of holds taken without one, renewed
	// every third of it (Redisson's lockWatchdogTimeout).
	DefaultWatchdogTimeout = 30 * time.Second
	// DefaultRenewalBatchSize is the most locks one renewal script call
	// extends (Redisson's lockWatchdogBatchSize).
	DefaultRenewalBatchSize = 100
	// MinWatchdogTimeout is the shortest watchdog timeout New accepts.
	MinWatchdogTimeout = 30 * time.Millisecond
)

// PubSubMode chooses between classic and sharded pub/sub.
type PubSubMode int

const (
	// PubSubAuto uses sharded pub/sub on a Redis 7+ cluster and classic
	// pub/sub everywhere else, as Redisson does by default. Choose the same
	// mode as the Java fleet, or waiters on one side are woken only by expiry.
	PubSubAuto PubSubMode = iota
	// PubSubClassic always uses SUBSCRIBE and PUBLISH.
	PubSubClassic
	// PubSubSharded always uses SSUBSCRIBE and SPUBLISH (Redis 7+).
	PubSubSharded
)

// Observer is told about renewal failures and lost locks. Its methods run
// on the renewal goroutine and must return quickly.
type Observer = renewal.Observer

// Option configures a Client.
type Option func(*config)

type config struct {
	watchdog  time.Duration
	batchSize int
	pubsub    PubSubMode
	observer  Observer
}

func defaultConfig() config {
	return config{watchdog: DefaultWatchdogTimeout, batchSize: DefaultRenewalBatchSize}
}

func (c config) validate() error {
	if c.watchdog < MinWatchdogTimeout {
		return fmt.Errorf("%w: watchdog timeout %v is below the minimum %v", ErrInvalid, c.watchdog, MinWatchdogTimeout)
	}
	if c.batchSize < 1 {
		return fmt.Errorf("%w: renewal batch size %d must be at least 1", ErrInvalid, c.batchSize)
	}
	if c.pubsub < PubSubAuto || c.pubsub > PubSubSharded {
		return fmt.Errorf("%w: unknown pub/sub mode %d", ErrInvalid, c.pubsub)
	}
	return nil
}

// WithWatchdogTimeout sets the lease of holds taken without one; the
// watchdog renews them every third of it. The default is 30s
// (DefaultWatchdogTimeout); the minimum is 30ms. Use the same value as the
// Java fleet's lockWatchdogTimeout.
func WithWatchdogTimeout(d time.Duration) Option {
	return func(c *config) { c.watchdog = d }
}

// WithRenewalBatchSize sets the most locks one renewal script call extends.
// The default is 100 (DefaultRenewalBatchSize).
func WithRenewalBatchSize(n int) Option {
	return func(c *config) { c.batchSize = n }
}

// WithPubSubMode chooses classic or sharded pub/sub. The default is
// PubSubAuto.
func WithPubSubMode(m PubSubMode) Option {
	return func(c *config) { c.pubsub = m }
}

// WithObserver has o told about renewal failures and lost locks. The default
// is to tell no one.
func WithObserver(o Observer) Option {
	return func(c *config) { c.observer = o }
}

// WithLogger logs renewal failures (Warn) and lost locks (Error) to l. The
// default is silence. Logs carry lock names, never owner ids.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.observer = slogObserver{l}
		}
	}
}

type slogObserver struct{ l *slog.Logger }

func (o slogObserver) RenewalFailed(n int, err error) {
	o.l.Warn("interlock: renewal failed; retrying next tick", "locks", n, "err", err)
}

func (o slogObserver) LockLost(name string, cause error) {
	o.l.Error("interlock: lock lost", "lock", name, "cause", cause)
}
