// Package runtime is what one interlock Client runs: its id, the pub/sub
// Hub, the renewal Scheduler, the undo queue, the latch deleter, the wall
// clock and its skew guard, the publish-mode probe, and the acks of safe
// mode and replica-sync mode.
//
// The root package creates a Runtime in interlock.New; lock kinds reach it
// with Of, never through exported methods of interlock.Client.
package runtime

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/pubsub"
	"github.com/interlock-go/interlock/internal/renewal"
	"github.com/interlock-go/interlock/internal/report"
	"github.com/interlock-go/interlock/internal/route"
	"github.com/interlock-go/interlock/internal/script"
)

// Of returns the Runtime of an *interlock.Client. The root package sets it
// in its init, as grpc-go's internal function variables are set; the
// parameter is untyped because this package cannot import the root.
var Of func(client any) *Runtime

// Publish modes, as interlock.PubSubMode numbers them.
const (
	PubSubAuto = iota
	PubSubClassic
	PubSubSharded
)

// Config is what interlock.New resolved from its options.
type Config struct {
	Watchdog       time.Duration
	BatchSize      int
	PubSub         int // PubSubAuto, PubSubClassic or PubSubSharded
	PubSubOptions  []pubsub.Option
	Observer       Observer // nil: nobody
	ReplicaAcks    int      // 0: safe mode off
	ReplicaSync    bool     // replica-sync mode (never with ReplicaAcks)
	ReplicaSyncAck bool     // replica-sync mode waits with WAIT only, never WAITAOF
	ReplicaTimeout time.Duration
	MaxHold        time.Duration
	SkewLimit      time.Duration // 0: no skew guard
	// Names maps every object name before a key is derived (nil: as is).
	Names NameMapper
}

// Observer is what the root makes of an interlock.Observer: it hears the
// engine's events, the renewal Scheduler and the pub/sub Hub.
type Observer interface {
	report.Observer
	renewal.Observer
	// PubSubFailed hears the Hub's background failures.
	PubSubFailed(err error)
	// PubSubReconnected hears a subscription connection that works again
	// after a failure.
	PubSubReconnected()
}

// NameMapper is interlock.NameMapper.
type NameMapper interface {
	Map(name string) string
	Unmap(mapped string) string
}

// Runtime is one Client's shared machinery. Its fields are set by New and
// never change.
type Runtime struct {
	RC      rueidis.Client
	ID      string
	Cfg     Config
	Hub     *pubsub.Hub
	Renewal *renewal.Scheduler
	// Transfers is where this Client's waiters stand ready to be passed a
	// lock by its releasing holder.
	Transfers *Transfers

	watchdogMS string // Cfg.Watchdog in ms, formatted once
	ordered    bool   // scripts go on one connection (script.Ordered)
	// nodeOrdered: a cluster client found to keep one connection per
	// node (probeNodes), on which its scripts also run in call order.
	nodeOrdered atomic.Bool
	probeNodes  sync.Once

	latches  *deleter
	side     *aside // the renewal rounds' and sweeps' connection
	settle   *settler
	detached *detacher
	clock    wallClock
	closed   atomic.Bool

	// answer is the publish-mode probe's, read without modeMu on every
	// release: 0 not known yet, 1 classic, 2 sharded.
	answer    atomic.Int32
	modeMu    sync.Mutex
	probing   chan struct{} // closed when the probe in flight ends; nil: none
	probeErr  string        // the server's refusal of the probe
	shardedOK atomic.Bool   // sharded mode: the probe found sharded pub/sub

	waits    waitCounts
	replicas replicaCounts // replica-sync mode
	waiters  atomic.Int64  // acquisitions and awaits parked in a wait
	owners   ownerNames

	tasksMu sync.Mutex
	tasks   map[string]*renewal.Task
}

// Task returns this Runtime's renew task called name, made by mk on first
// use, for kinds whose renewals read the Runtime (its wall clock).
func (r *Runtime) Task(name string, mk func(*Runtime) *renewal.Task) *renewal.Task {
	r.tasksMu.Lock()
	defer r.tasksMu.Unlock()
	t := r.tasks[name]
	if t == nil {
		if r.tasks == nil {
			r.tasks = make(map[string]*renewal.Task)
		}
		t = mk(r)
		r.tasks[name] = t
	}
	return t
}

// New starts a Runtime on rc: one renewal goroutine, one clean-up goroutine
// and the latch deleter (no goroutine of its own: a timer set while keys
// wait). It sends nothing to Redis.
func New(rc rueidis.Client, cfg Config) (*Runtime, error) {
	var observer renewal.Observer
	opts := cfg.PubSubOptions
	if cfg.Observer != nil {
		observer = cfg.Observer
		opts = append([]pubsub.Option{pubsub.WithErrorHandler(cfg.Observer.PubSubFailed),
			pubsub.WithReconnectHandler(cfg.Observer.PubSubReconnected)}, opts...)
	}
	// One table of a cluster's masters for the rounds' connections and
	// the hub's sharded channels: one topology read serves both.
	routes := new(route.Table)
	opts = append(slices.Clip(opts), pubsub.WithRoutes(routes))
	side := newAside(rc, routes)
	sched, err := renewal.New(rc, renewal.Config{
		Send:       side.DoMulti,
		Lease:      cfg.Watchdog,
		BatchSize:  cfg.BatchSize,
		Observer:   observer,
		Closed:     report.ErrClosed,
		MaxHold:    cfg.MaxHold,
		MaxHoldErr: report.ErrMaxHold,
	})
	if err != nil {
		return nil, err
	}
	hub, err := pubsub.NewHub(rc, opts...)
	if err != nil {
		sched.Close()
		return nil, err
	}
	r := &Runtime{
		RC:        rc,
		ID:        newUUID(),
		Cfg:       cfg,
		Hub:       hub,
		Renewal:   sched,
		Transfers: newTransfers(),
		latches:   newDeleter(rc, side),
		side:      side,
		settle:    newSettler(report.ErrClosed),
		detached:  newDetacher(),
		waits:     waitCounts{m: make(map[waitKey]int)},
		ordered:   rc.Mode() != rueidis.ClientModeCluster,
	}
	r.clock.limit = cfg.SkewLimit
	r.watchdogMS = strconv.FormatInt(cfg.Watchdog.Milliseconds(), 10)
	return r, nil
}

// LeaseMS formats a lease as whole milliseconds, the unit of every script
// argument; the watchdog timeout, which most holds have, is formatted once.
func (r *Runtime) LeaseMS(d time.Duration) string {
	if d == r.Cfg.Watchdog && r.watchdogMS != "" {
		return r.watchdogMS
	}
	return strconv.FormatInt(d.Milliseconds(), 10)
}

// Close stops every goroutine and subscription and returns once they have
// exited. It is safe to call more than once.
func (r *Runtime) Close() {
	if r.closed.Swap(true) {
		return
	}
	r.Renewal.Close()
	r.Hub.Close()
	// The last clean-up steps first: their latches go in the last DEL.
	deadline := time.Now().Add(closeBudget)
	r.settle.close(deadline)
	r.detached.close()
	r.latches.close(deadline)
	r.side.close()
}

// closeBudget bounds what Close still sends: the clean-up steps queued and
// the latches to delete share it, so that a server that does not answer
// delays Close by this much at most. What it leaves expires by its TTL.
const closeBudget = 500 * time.Millisecond

// Closed reports whether Close has been called.
func (r *Runtime) Closed() bool { return r.closed.Load() }

// UndoQueue returns how many locks and owners have clean-up steps pending.
func (r *Runtime) UndoQueue() int { return int(r.settle.n.Load()) }

// Waiters returns the counter of this Client's calls parked in a wait
// (wait.Spec.Waiters), which Stats reports.
func (r *Runtime) Waiters() *atomic.Int64 { return &r.waiters }

// DeleteLater queues key for deletion: it rides on the Client's next
// script on its slot, or the sweep deletes it (see deleter).
func (r *Runtime) DeleteLater(key string) { r.latches.add(key) }

// Sharded reports whether releases go out with SPUBLISH and waiters use
// SSUBSCRIBE. In auto mode that is Redisson's choice: sharded on a cluster
// whose nodes answer PUBSUB SHARDNUMSUB, probed once. One caller probes
// with its own ctx while the others wait for the answer or their own ctx;
// a network error is returned and the probe tried again by the next call.
// In sharded mode the same probe runs once, and a server that does not know
// the command (Redis 6.x) makes every call fail with ErrInvalid
// (ErrNoShardedPubSub) before anything else is sent.
func (r *Runtime) Sharded(ctx context.Context) (bool, error) {
	switch r.Cfg.PubSub {
	case PubSubClassic:
		return false, nil
	case PubSubSharded:
		if r.shardedOK.Load() {
			return true, nil
		}
		return true, r.checkSharded(ctx)
	}
	if r.RC.Mode() != rueidis.ClientModeCluster {
		return false, nil
	}
	return r.probed(ctx)
}

// ErrNoShardedPubSub is wrapped, with report.ErrInvalid, by every error of
// a Client in sharded mode on a server without sharded pub/sub.
var ErrNoShardedPubSub = errors.New("sharded pub/sub mode needs Redis 7.0 or later (or Valkey)")

// CheckPubSub returns the error that Sharded would, so that acquisitions,
// which publish nothing, are refused in sharded mode on a server that has
// no sharded pub/sub before they take what no release could give back.
// In the other modes it does nothing.
func (r *Runtime) CheckPubSub(ctx context.Context) error {
	if r.Cfg.PubSub != PubSubSharded || r.shardedOK.Load() {
		return nil
	}
	return r.checkSharded(ctx)
}

// checkSharded runs the probe once in sharded mode: only a server that does
// not know PUBSUB SHARDNUMSUB is refused; any other refusal (an ACL that
// allows SPUBLISH but not PUBSUB) leaves the scripts to answer.
func (r *Runtime) checkSharded(ctx context.Context) error {
	ok, err := r.probed(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %w: the server refused PUBSUB SHARDNUMSUB: %s", report.ErrInvalid, ErrNoShardedPubSub, r.probeErr)
	}
	r.shardedOK.Store(true)
	return nil
}

// probed returns the probe's answer, probing once (see Sharded).
func (r *Runtime) probed(ctx context.Context) (bool, error) {
	for {
		if a := r.answer.Load(); a != 0 {
			return a == 2, nil
		}
		r.modeMu.Lock()
		a, probing := r.answer.Load(), r.probing
		if a == 0 && probing == nil {
			r.probing = make(chan struct{})
		}
		r.modeMu.Unlock()
		if a != 0 {
			return a == 2, nil
		}
		if probing == nil {
			return r.probeSharded(ctx)
		}
		select {
		case <-probing:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// probeSharded asks the cluster whether it has sharded pub/sub, records the
// answer unless the question failed, and lets the callers waiting for it
// go on.
func (r *Runtime) probeSharded(ctx context.Context) (bool, error) {
	err := r.RC.Do(ctx, script.Resendable(r.RC.B().PubsubShardnumsub().Channel("0").Build())).Error()
	re, isRedisErr := rueidis.IsRedisErr(err)
	r.modeMu.Lock()
	defer r.modeMu.Unlock()
	close(r.probing)
	r.probing = nil
	if err != nil && !isRedisErr {
		return false, err
	}
	sharded := err == nil
	if r.Cfg.PubSub == PubSubSharded && isRedisErr && !script.IsUnknownCommand(err) {
		sharded = true // refused otherwise: the scripts will say why
	}
	if sharded {
		r.answer.Store(2)
	} else {
		r.probeErr = re.Error()
		r.answer.Store(1)
	}
	return sharded, nil
}

// PublishCommand returns "SPUBLISH" or "PUBLISH" (see Sharded), the command
// lock scripts announce releases with.
func (r *Runtime) PublishCommand(ctx context.Context) (string, error) {
	sharded, err := r.Sharded(ctx)
	if sharded {
		return "SPUBLISH", err
	}
	return "PUBLISH", err
}

// WakeAll wakes every waiter of channel in this process without sending
// anything, for releases that publish nothing (a read/write downgrade).
func (r *Runtime) WakeAll(ctx context.Context, channel string) {
	if sharded, err := r.Sharded(ctx); err == nil {
		r.Hub.WakeAll(channel, sharded)
	}
}

// waitKey names one owner's acquisitions of one lock.
type waitKey struct{ name, owner string }

// waitCounts counts the acquisitions that may be waiting, by lock and
// owner, of the kinds that ask (CountWait): a read/write lock's read half
// wakes its owner's waiting write acquisition, to refuse the upgrade rather
// than wait for the read hold it just took.
type waitCounts struct {
	mu sync.Mutex
	m  map[waitKey]int
}

// CountWait counts an acquisition by owner of name that may wait (d = 1)
// or has ended (d = -1).
func (r *Runtime) CountWait(name, owner string, d int) {
	w := &r.waits
	k := waitKey{name, owner}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m[k] += d; w.m[k] <= 0 {
		delete(w.m, k)
	}
}

// Waiting reports whether an acquisition by owner of name that CountWait
// counted may be waiting.
func (r *Runtime) Waiting(name, owner string) bool {
	w := &r.waits
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.m[waitKey{name, owner}] > 0
}

// newUUID returns a random version 4 UUID in lower case.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails on supported platforms
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
