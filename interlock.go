package interlock

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/pubsub"
	"github.com/interlock-go/interlock/renewal"
)

var (
	// ErrClosed is returned by every lock operation once the Client is closed.
	ErrClosed = errors.New("interlock: client closed")
	// ErrInvalid is wrapped by every error about a bad argument: an empty or
	// unusable lock name, a negative duration, a nil client. Such errors are
	// returned before anything is sent to Redis.
	ErrInvalid = errors.New("interlock: invalid argument")
	// ErrReplication is wrapped by the error of an acquisition or unlock
	// that fewer replicas acknowledged than WithReplicaAcks asks for.
	ErrReplication = errors.New("interlock: too few replicas acknowledged")
	// ErrMaxHold is wrapped, together with the lock kind's ErrLockLost, by
	// the cause of a guard that WithMaxHold ended.
	ErrMaxHold = errors.New("interlock: lock held longer than the maximum hold time")
)

// Client is the process-side half of every lock: it carries the client id
// that appears in lock hash fields, the pub/sub Hub that waiters share and
// the renewal Scheduler that keeps watchdog holds alive. Create one per
// rueidis.Client and share it; it is safe for concurrent use.
type Client struct {
	rc      rueidis.Client
	id      string
	cfg     config
	hub     *pubsub.Hub
	renewal *renewal.Scheduler
	latches *deleter
	settle  *settler
	closed  atomic.Bool

	modeMu    sync.Mutex
	modeKnown bool
	sharded   bool
}

// New returns a Client that runs its locks through rc. The caller keeps
// ownership of rc: Close stops what New started and leaves rc open.
// Standalone, sentinel and cluster rueidis clients all work.
//
// New starts one renewal goroutine and one latch-cleanup goroutine, and
// sends nothing to Redis.
func New(rc rueidis.Client, opts ...Option) (*Client, error) {
	if rc == nil {
		return nil, fmt.Errorf("%w: nil rueidis client", ErrInvalid)
	}
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cluster := rc.Mode() == rueidis.ClientModeCluster
	sched, err := renewal.New(rc, renewal.Config{
		Lease:      cfg.watchdog,
		BatchSize:  cfg.batchSize,
		Cluster:    cluster,
		Observer:   cfg.observer,
		Closed:     ErrClosed,
		MaxHold:    cfg.maxHold,
		MaxHoldErr: ErrMaxHold,
	})
	if err != nil {
		return nil, err
	}
	hub, err := pubsub.NewHub(rc)
	if err != nil {
		sched.Close()
		return nil, err
	}
	return &Client{
		rc:      rc,
		id:      newUUID(),
		cfg:     cfg,
		hub:     hub,
		renewal: sched,
		latches: newDeleter(rc, cluster),
		settle:  newSettler(),
	}, nil
}

// ID returns the client id: a random, lower-case UUID v4 made by New. It is
// the first half of every owner string, as RedissonClient.getId() is.
func (c *Client) ID() string { return c.id }

// Close stops every goroutine and subscription the Client started and
// returns once they have exited. Locks still held are no longer renewed and
// expire on the server when their lease runs out; their guards are
// cancelled. Close never closes the rueidis client. It is safe to call more
// than once.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	c.renewal.Close()
	c.hub.Close()
	c.latches.close()
	c.settle.close()
	return nil
}

// Closed reports whether Close has been called.
func (c *Client) Closed() bool { return c.closed.Load() }

// Redis returns the rueidis client the locks run on.
func (c *Client) Redis() rueidis.Client { return c.rc }

// PubSub returns the Hub that shares subscriptions among waiters.
func (c *Client) PubSub() *pubsub.Hub { return c.hub }

// Renewal returns the Scheduler that records holds and renews watchdog holds.
func (c *Client) Renewal() *renewal.Scheduler { return c.renewal }

// WatchdogTimeout returns the lease of watchdog holds (renewed every third
// of it).
func (c *Client) WatchdogTimeout() time.Duration { return c.cfg.watchdog }

// ReplicaAcks returns the replica acknowledgements WithReplicaAcks asks
// for, and their timeout; n is 0 when safe mode is off.
func (c *Client) ReplicaAcks() (n int, timeout time.Duration) {
	return c.cfg.replicaAcks, c.cfg.replicaTimeout
}

// MaxHold returns the limit set by WithMaxHold, 0 for none.
func (c *Client) MaxHold() time.Duration { return c.cfg.maxHold }

// DeleteLater queues key for deletion by the Client's cleanup goroutine,
// which deletes queued keys in batches. Unlocks use it for their latch keys
// so that the caller's path stays at one round trip.
func (c *Client) DeleteLater(key string) { c.latches.add(key) }

// Sharded reports whether locks publish with SPUBLISH and wait with
// SSUBSCRIBE. With PubSubAuto that is Redisson's default choice: sharded on
// a cluster whose nodes answer PUBSUB SHARDNUMSUB (Redis 7 and later),
// classic otherwise. The probe is sent once, on first use, with ctx; a
// network error is returned and the probe tried again next time.
func (c *Client) Sharded(ctx context.Context) (bool, error) {
	switch c.cfg.pubsub {
	case PubSubClassic:
		return false, nil
	case PubSubSharded:
		return true, nil
	}
	if c.rc.Mode() != rueidis.ClientModeCluster {
		return false, nil
	}
	c.modeMu.Lock()
	defer c.modeMu.Unlock()
	if !c.modeKnown {
		err := c.rc.Do(ctx, c.rc.B().PubsubShardnumsub().Channel("0").Build()).Error()
		if _, isRedisErr := rueidis.IsRedisErr(err); err != nil && !isRedisErr {
			return false, err
		}
		c.sharded, c.modeKnown = err == nil, true
	}
	return c.sharded, nil
}

// PublishCommand returns "SPUBLISH" or "PUBLISH", the command lock scripts
// announce releases with (see Sharded).
func (c *Client) PublishCommand(ctx context.Context) (string, error) {
	sharded, err := c.Sharded(ctx)
	if sharded {
		return "SPUBLISH", err
	}
	return "PUBLISH", err
}

// newUUID returns a random version 4 UUID in lower case.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails on supported platforms
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
