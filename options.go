package interlock

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/interlock-go/interlock/internal/pubsub"
	"github.com/interlock-go/interlock/internal/runtime"
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
	// DefaultReplicaSyncTimeout is the WAIT timeout of Redisson's replica
	// sync (slavesSyncTimeout), for WithReplicaSync.
	DefaultReplicaSyncTimeout = time.Second
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
	// PubSubSharded always uses SSUBSCRIBE and SPUBLISH (Redis 7+). On a
	// server without them (Redis 6.x), every operation fails with ErrInvalid
	// before it sends anything but one PUBSUB SHARDNUMSUB probe.
	PubSubSharded
)

// Option configures a Client.
type Option func(*config)

// config is the runtime's configuration, plus what validation needs.
type config struct {
	runtime.Config
	observers  []Observer // WithObserver's and WithLogger's, in order
	replicaSet bool       // WithReplicaAcks was given
	syncSet    bool       // WithReplicaSync was given
	// syncMode is WithReplicaSyncMode's value, if given.
	syncMode    SyncMode
	syncModeSet bool
}

func defaultConfig() config {
	return config{Config: runtime.Config{Watchdog: DefaultWatchdogTimeout, BatchSize: DefaultRenewalBatchSize}}
}

func (c config) validate() error {
	if c.Watchdog < MinWatchdogTimeout {
		return fmt.Errorf("%w: watchdog timeout %v is below the minimum %v", ErrInvalid, c.Watchdog, MinWatchdogTimeout)
	}
	if c.BatchSize < 1 {
		return fmt.Errorf("%w: renewal batch size %d must be at least 1", ErrInvalid, c.BatchSize)
	}
	if m := PubSubMode(c.PubSub); m < PubSubAuto || m > PubSubSharded {
		return fmt.Errorf("%w: unknown pub/sub mode %d", ErrInvalid, c.PubSub)
	}
	if c.replicaSet && c.syncSet {
		return fmt.Errorf("%w: WithReplicaAcks and WithReplicaSync cannot be combined", ErrInvalid)
	}
	if c.syncModeSet && (c.syncMode < SyncAuto || c.syncMode > SyncAck) {
		return fmt.Errorf("%w: unknown replica sync mode %d", ErrInvalid, int(c.syncMode))
	}
	if c.syncModeSet && !c.syncSet {
		return fmt.Errorf("%w: WithReplicaSyncMode needs WithReplicaSync", ErrInvalid)
	}
	if c.syncSet && c.ReplicaTimeout < time.Millisecond {
		return fmt.Errorf("%w: replica sync timeout %v must be at least 1ms", ErrInvalid, c.ReplicaTimeout)
	}
	if c.replicaSet {
		if c.ReplicaAcks < 1 {
			return fmt.Errorf("%w: replica acknowledgements %d must be at least 1", ErrInvalid, c.ReplicaAcks)
		}
		if c.ReplicaTimeout < time.Millisecond {
			// WAIT takes whole milliseconds, and WAIT n 0 blocks forever.
			return fmt.Errorf("%w: replica acknowledgement timeout %v must be at least 1ms", ErrInvalid, c.ReplicaTimeout)
		}
	}
	if c.SkewLimit < 0 {
		return fmt.Errorf("%w: clock skew limit %v must not be negative", ErrInvalid, c.SkewLimit)
	}
	if c.MaxHold < 0 {
		return fmt.Errorf("%w: max hold %v must not be negative", ErrInvalid, c.MaxHold)
	}
	return nil
}

// WithWatchdogTimeout sets the lease of holds taken without one; the
// watchdog renews them every third of it. The default is 30s
// (DefaultWatchdogTimeout); the minimum is 30ms. Use the same value as the
// Java fleet's lockWatchdogTimeout.
func WithWatchdogTimeout(d time.Duration) Option {
	return func(c *config) { c.Watchdog = d }
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
		c.ReplicaAcks, c.ReplicaTimeout, c.replicaSet = n, timeout, true
	}
}

// WithReplicaSync follows every acquire and unlock script, in its
// pipeline, with WAIT n timeout, n being the replicas the key's master has
// (none: nothing is added), and takes back an acquisition none of them
// acknowledged, which fails with ErrReplication; an unlock still counts.
// Where the master has AOF on and knows WAITAOF, it sends WAITAOF 1 n
// timeout instead and counts the replicas that wrote the script's effects
// to their AOF; WithReplicaSyncMode(SyncAck) keeps to WAIT.
//
// This is Redisson's checkLockSyncedSlaves, its default outside
// single-server configs. n is connected_slaves of INFO replication, read
// from the key's master (on a cluster, the node of its slot) before the
// first call, after a WAIT answered another number, and at least every
// 10s. A server that refuses INFO or WAIT fails every acquisition. Java
// reruns a failed call up to four times, 1 to 2s apart; this fails at once.
//
// WithReplicaAcks (safe mode) instead asks a fixed number of
// acknowledgements and fails below it; this waits up to timeout for every
// replica there is and fails only when none acknowledged. Neither closes
// the window in which a failover loses a lock.
//
// It is off by default, unlike in Redisson: WAIT is a durability measure
// only, changing no key, script or exclusion (Go and Java share locks with
// it on or off), and it costs every call a wait for the slowest replica,
// up to timeout while none acknowledges. Pass DefaultReplicaSyncTimeout
// (1s, Redisson's slavesSyncTimeout) to behave as a Java fleet's defaults
// do. timeout must be at least 1ms; it cannot be combined with
// WithReplicaAcks.
func WithReplicaSync(timeout time.Duration) Option {
	return func(c *config) {
		c.ReplicaSync, c.ReplicaTimeout, c.syncSet = true, timeout, true
	}
}

// WithMaxHold bounds how long the watchdog renews a hold: d after a lock
// was acquired (its first watchdog hold, re-entries included), renewal of
// it stops, its guards are cancelled with a cause that wraps both the lock
// kind's ErrLockLost and ErrMaxHold, and the key expires on the server by
// itself within one watchdog timeout. It protects the other waiters from a
// hung worker that never unlocks. An Unlock after that returns an error
// wrapping the kind's ErrLockLost and ErrMaxHold when the key is gone or
// the server does not answer within 200 ms (the release then goes on in
// the background), and releases normally when it is still there. Holds
// with an explicit lease are not affected, Extend's included: a holder
// that asks for more time is alive. The default, 0, is no limit, as in
// Redisson.
func WithMaxHold(d time.Duration) Option {
	return func(c *config) { c.MaxHold = d }
}

// WithRenewalBatchSize sets the most locks one renewal script call extends.
// The default is 100 (DefaultRenewalBatchSize).
func WithRenewalBatchSize(n int) Option {
	return func(c *config) { c.BatchSize = n }
}

// WithPubSubMode chooses classic or sharded pub/sub. The default is
// PubSubAuto.
func WithPubSubMode(m PubSubMode) Option {
	return func(c *config) { c.PubSub = int(m) }
}

// WithObserver has o told about every acquisition, release, renewal tick,
// loss, resend, refusal, undo and pub/sub failure of the Client's
// synchronizers (see Observer and Event). Given more than once, and with
// WithLogger, every one is told, in the order given. The default is to
// tell no one and build no events.
func WithObserver(o Observer) Option {
	return func(c *config) {
		if o != nil {
			c.observers = append(c.observers, o)
		}
	}
}

// WithLogger logs, next to any Observer, renewal and pub/sub failures
// (Warn), lost holds (Error), acquisitions refused by safe mode or replica
// sync, failed undo tries and Unlocks by an owner other than the one the
// Client holds the lock for (Warn), to l with the caller's context
// where there is one (slog.Logger.LogAttrs), so that a handler can add its
// trace ids. Acquisitions and releases are not logged. The default is
// silence. Logs carry names, never owner ids.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.observers = append(c.observers, slogObserver{l})
		}
	}
}

// slogObserver is WithLogger's Observer.
type slogObserver struct{ l *slog.Logger }

func (o slogObserver) Observe(ctx context.Context, e Event) {
	switch {
	case e.Op == OpRenew && e.Failures > 0:
		o.l.LogAttrs(ctx, slog.LevelWarn, "interlock: renewal failed; retrying next tick",
			slog.Int("locks", e.Failures), slog.Any("err", e.Err))
	case e.Op == OpLost:
		o.l.LogAttrs(ctx, slog.LevelError, "interlock: lock lost",
			slog.String("kind", string(e.Kind)), slog.String("lock", e.Name), slog.Any("cause", e.Err))
	case e.Op == OpPubSub && e.Outcome == OutcomeError:
		o.l.LogAttrs(ctx, slog.LevelWarn, "interlock: pub/sub failed; waiters resubscribe or poll", slog.Any("err", e.Err))
	case e.Op == OpRefused:
		o.l.LogAttrs(ctx, slog.LevelWarn, "interlock: acquisition refused by the replicas and taken back",
			slog.String("kind", string(e.Kind)), slog.String("lock", e.Name), slog.Any("err", e.Err))
	case e.Op == OpRelease && e.Outcome == OutcomeNotHeld && e.Err != nil:
		o.l.LogAttrs(ctx, slog.LevelWarn, "interlock: Unlock by an owner that holds nothing, while this Client holds the lock for another owner; "+
			"unlock from the goroutine that locked, or use interlock.WithOwner",
			slog.String("kind", string(e.Kind)), slog.String("lock", e.Name))
	case e.Op == OpUndo && e.Outcome == OutcomeError:
		o.l.LogAttrs(ctx, slog.LevelWarn, "interlock: taking back an acquisition whose reply was lost failed; retrying",
			slog.String("kind", string(e.Kind)), slog.String("lock", e.Name), slog.Any("err", e.Err))
	}
}

// WithClockSkewLimit turns on the fair lock's skew guard: before a fair
// lock queues a waiter, the Client compares its clock with the server's
// TIME (at most once a minute), and beyond limit Lock and TryLock refuse to
// queue with an error wrapping ErrClockSkew (see the fairlock package). A
// quarter of the fair lock's wait timeout is a sensible limit. The default,
// 0, is no check, as in Redisson.
func WithClockSkewLimit(limit time.Duration) Option {
	return func(c *config) { c.SkewLimit = limit }
}

// WithResubscribeBackoff sets the delay after the attempt-th (1, 2, ...)
// consecutive failed reconnection of the Client's pub/sub connections; fn
// must be safe for concurrent use. The default starts at 25 ms and doubles
// up to 2 s. A nil fn is ErrInvalid.
func WithResubscribeBackoff(fn func(attempt int) time.Duration) Option {
	return func(c *config) { c.PubSubOptions = append(c.PubSubOptions, pubsub.WithReconnectBackoff(fn)) }
}
