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

	replicaAcks    int // 0: safe mode off
	replicaTimeout time.Duration
	replicaSet     bool
	maxHold        time.Duration
	clock          *wallClock // WithWallClock, WithClockSkewLimit (clock.go)
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
	if c.replicaSet {
		if c.replicaAcks < 1 {
			return fmt.Errorf("%w: replica acknowledgements %d must be at least 1", ErrInvalid, c.replicaAcks)
		}
		if c.replicaTimeout < time.Millisecond {
			// WAIT takes whole milliseconds, and WAIT n 0 blocks forever.
			return fmt.Errorf("%w: replica acknowledgement timeout %v must be at least 1ms", ErrInvalid, c.replicaTimeout)
		}
	}
	if c.clock != nil && c.clock.limit < 0 {
		return fmt.Errorf("%w: clock skew limit %v must not be negative", ErrInvalid, c.clock.limit)
	}
	if c.maxHold < 0 {
		return fmt.Errorf("%w: max hold %v must not be negative", ErrInvalid, c.maxHold)
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

// WithReplicaAcks turns on safe mode: every acquire and unlock script is
// followed, on the same connection and in the same pipeline, by
// WAIT n timeout, so the server reports how many replicas have the write.
// (On a cluster both go to the node that owns the lock's slot.)
//
// An acquisition (a re-entry too) that fewer than n replicas acknowledged
// within timeout is taken back at once, exactly as one whose reply was
// lost, and the call returns an error wrapping ErrReplication that says
// how many replicas did; a waiting Lock returns it rather than trying
// again. An unlock that fewer than n acknowledged still counts (the hold
// is gone on the master) and returns an error wrapping ErrReplication. A
// server that refuses WAIT makes every acquisition fail the same way.
// Renewals are not followed by WAIT: they only move an expiry that the
// acquisition already replicated, and waiting in the one renewal goroutine
// would delay every other lock's renewal.
//
// This narrows the window in which a failover loses a lock; it does not
// close it. Replication stays asynchronous: the replica promoted after a
// crash need not be one that acknowledged, and a write acknowledged by
// some replicas can still be lost (the Redis WAIT documentation says as
// much). It is Redisson's checkLockSyncedSlaves idea, with an explicit
// count rather than "all known replicas, failing only when none
// acknowledged". Protect writes with a fenced lock where it matters.
//
// n must be at least 1 and timeout at least 1ms. The default is off.
func WithReplicaAcks(n int, timeout time.Duration) Option {
	return func(c *config) {
		c.replicaAcks, c.replicaTimeout, c.replicaSet = n, timeout, true
	}
}

// WithMaxHold bounds how long the watchdog renews a hold: d after a lock
// was acquired (its first watchdog hold, re-entries included), renewal of
// it stops, its guards are cancelled with a cause that wraps both the lock
// kind's ErrLockLost and ErrMaxHold, and the key expires on the server by
// itself within one watchdog timeout. It protects the other waiters from a
// hung worker that never unlocks. An Unlock after that returns an error
// wrapping the kind's ErrLockLost and ErrMaxHold when the key is gone, and
// releases normally when it is still there. Holds with an explicit lease
// are not affected. The default, 0, is no limit, as in Redisson.
func WithMaxHold(d time.Duration) Option {
	return func(c *config) { c.maxHold = d }
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
