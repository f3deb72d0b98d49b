package pubsub

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/route"
)

var (
	// ErrClosed is returned by Subscribe after Hub.Close, by Wait once the
	// hub that owns the subscription has been closed, and by Subscribe calls
	// that were still waiting for a confirmation when the hub closed.
	ErrClosed = errors.New("pubsub: hub closed")

	// ErrSubscriptionClosed is returned by Wait on a Subscription that was
	// closed, including a Wait that was parked while another goroutine closed
	// the Subscription.
	ErrSubscriptionClosed = errors.New("pubsub: subscription closed")
)

// DefaultMaxBackoff is the ceiling of DefaultReconnectBackoff.
const DefaultMaxBackoff = 2 * time.Second

const (
	// maxChannelsPerRound bounds how many channels one reconciliation round
	// puts into a single pipelined DoMulti, so that a burst of thousands of
	// new channels does not delay newcomers behind one huge round trip.
	maxChannelsPerRound = 512

	// maxChannelsPerCommand bounds how many channels one classic SUBSCRIBE or
	// UNSUBSCRIBE command carries.
	maxChannelsPerCommand = 128
)

// DefaultReconnectBackoff is the delay before the attempt-th consecutive
// reconnection attempt of a subscription connection: 25ms doubled per
// attempt, capped at DefaultMaxBackoff. The first reconnection after a
// working connection broke is made at once and does not consult the backoff.
func DefaultReconnectBackoff(attempt int) time.Duration {
	if attempt < 1 {
		return 0
	}
	if attempt > 8 {
		return DefaultMaxBackoff
	}
	return min(25*time.Millisecond<<(attempt-1), DefaultMaxBackoff)
}

// Option configures a Hub. Options are applied in order by NewHub.
type Option func(*config) error

type config struct {
	onError     []func(error)
	onReconnect []func()
	backoff     func(attempt int) time.Duration
	routes      *route.Table
}

// WithErrorHandler adds fn to the handlers told about background failures: a
// subscription connection that broke or could not be established, a
// (S)SUBSCRIBE the server rejected, a cluster topology query that failed.
// fn is called from the hub's connection goroutines, never while the hub
// holds a lock; it must not block for long, since the goroutine that calls it
// also serves that connection. Every handler given is called, in order. The
// default is to stay silent. A nil fn is an error.
func WithErrorHandler(fn func(err error)) Option {
	return func(c *config) error {
		if fn == nil {
			return errors.New("pubsub: nil error handler")
		}
		c.onError = append(c.onError, fn)
		return nil
	}
}

// WithReconnectHandler adds fn to the handlers told when a subscription
// connection that broke or could not be established works again, its
// channels subscribed. fn is called as the error handlers are, and must
// not block for long either. A nil fn is an error.
func WithReconnectHandler(fn func()) Option {
	return func(c *config) error {
		if fn == nil {
			return errors.New("pubsub: nil reconnect handler")
		}
		c.onReconnect = append(c.onReconnect, fn)
		return nil
	}
}

// WithReconnectBackoff sets the delay before the attempt-th (1, 2, ...)
// consecutive failed reconnection attempt of a subscription connection is
// followed by another one. The function must be safe for concurrent use and
// should be stateless. The default is DefaultReconnectBackoff. A nil fn is an
// error.
func WithReconnectBackoff(fn func(attempt int) time.Duration) Option {
	return func(c *config) error {
		if fn == nil {
			return errors.New("pubsub: nil reconnect backoff")
		}
		c.backoff = fn
		return nil
	}
}

// WithRoutes makes the hub route sharded channels by t, a table of the
// cluster's masters it shares with another user of the same client (the
// Client's renewal rounds), instead of one of its own. A nil t is an
// error.
func WithRoutes(t *route.Table) Option {
	return func(c *config) error {
		if t == nil {
			return errors.New("pubsub: nil route table")
		}
		c.routes = t
		return nil
	}
}

// chanKey names one server-side subscription: classic and sharded channels
// live in different namespaces on the server, so the same name may be
// subscribed in both modes at once.
type chanKey struct {
	name    string
	sharded bool
}

// connKey names one subscription connection: one for classic channels
// (addr is empty; in a cluster it goes to any one node), and one for sharded
// channels per node that owns slots of subscribed channels (addr is the node
// address in a cluster, empty otherwise).
type connKey struct {
	sharded bool
	addr    string
}

// Hub shares Redis subscriptions among the goroutines of one process: every
// channel is subscribed on the server once per hub, however many
// Subscriptions use it. A Hub is safe for concurrent use. It must be created
// with NewHub and released with Close.
type Hub struct {
	rc      rueidis.Client
	cluster bool
	cfg     config

	ctx    context.Context // cancelled by Close; every hub goroutine watches it
	cancel context.CancelFunc
	wg     sync.WaitGroup // one count per connection goroutine

	routes *route.Table // sharded channel routing in cluster mode

	// testHookBeforeSend, when set by white-box tests, runs in a connection
	// goroutine after a reconciliation round was decided and before its
	// commands are sent.
	testHookBeforeSend func()

	mu      sync.Mutex
	closed  bool
	entries map[chanKey]*entry
	conns   map[connKey]*subConn
	nextGen uint64 // connection generations, unique per hub
}

// NewHub returns a Hub that subscribes through rc. The hub never closes rc;
// close the hub before closing rc. rc may be a standalone, sentinel or
// cluster client. NewHub starts no goroutine: connection goroutines are
// started by the first Subscribe that needs them.
func NewHub(rc rueidis.Client, opts ...Option) (*Hub, error) {
	if rc == nil {
		return nil, errors.New("pubsub: nil rueidis client")
	}
	cfg := config{backoff: DefaultReconnectBackoff}
	for _, opt := range opts {
		if opt == nil {
			return nil, errors.New("pubsub: nil option")
		}
		if err := opt(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.routes == nil {
		cfg.routes = new(route.Table)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Hub{
		rc:      rc,
		routes:  cfg.routes,
		cluster: rc.Mode() == rueidis.ClientModeCluster,
		cfg:     cfg,
		ctx:     ctx,
		cancel:  cancel,
		entries: make(map[chanKey]*entry),
		conns:   make(map[connKey]*subConn),
	}, nil
}

// Close stops every goroutine and closes every subscription connection the
// hub started, and returns only after those goroutines have exited. Parked
// Waits return ErrClosed, Subscribe calls waiting for a confirmation return
// ErrClosed, and later Subscribe calls return ErrClosed. Closing the
// connections drops their subscriptions on the server. A connection that is
// being dialled when Close is called is waited for, which takes at most the
// client's dial timeout. Close is idempotent and safe for concurrent use.
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.cancel()
	h.wg.Wait()

	h.mu.Lock()
	entries := h.entries
	h.entries = make(map[chanKey]*entry)
	for _, e := range entries {
		e.gone = true
		if e.pending != nil {
			e.pending.complete(ErrClosed)
			e.pending = nil
		}
	}
	h.mu.Unlock()
	for _, e := range entries {
		e.shutdown()
	}
}

// Channels reports how many channels currently have local state in the hub,
// that is, how many distinct (channel, sharded) pairs have at least one open
// Subscription or a Subscribe waiting for its confirmation. It drops
// synchronously when the last Subscription of a channel is closed, while the
// server-side UNSUBSCRIBE follows asynchronously.
func (h *Hub) Channels() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.entries)
}

// Subscribe returns a Subscription to channel, as a classic (SUBSCRIBE,
// woken by PUBLISH) or sharded (SSUBSCRIBE, woken by SPUBLISH) channel. It
// returns only after the server has confirmed the subscription, so a message
// published after Subscribe returns is delivered to the Subscription.
//
// All Subscriptions to one channel share one server subscription, which the
// first of them creates; concurrent first subscribers all wait for the same
// confirmation. If it fails, every one of them gets the error. If ctx ends
// first, Subscribe returns ctx.Err() and holds no reference; a confirmation
// that arrives later is undone by an UNSUBSCRIBE when no one else uses the
// channel. On a Redis Cluster a sharded channel is subscribed on the node
// that owns its slot.
//
// The caller must Close the Subscription when done with it.
func (h *Hub) Subscribe(ctx context.Context, channel string, sharded bool) (*Subscription, error) {
	return h.SubscribeWith(ctx, channel, sharded, WakeLock)
}

// SubscribeWith is Subscribe with the wake policy the channel's messages
// follow. Every Subscription of one channel must ask for the same policy.
func (h *Hub) SubscribeWith(ctx context.Context, channel string, sharded bool, policy Policy) (*Subscription, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if channel == "" {
		return nil, errors.New("pubsub: empty channel name")
	}
	key := chanKey{name: channel, sharded: sharded}
	routed := sharded && h.cluster
	var slot uint16
	if routed {
		slot = keys.Slot(channel)
	}

	h.mu.Lock()
	for {
		if h.closed {
			h.mu.Unlock()
			return nil, ErrClosed
		}
		if h.entries[key] != nil || !routed {
			break
		}
		if _, gen, ok := h.routes.Master(slot); !ok {
			// A new sharded channel whose slot owner we don't know yet:
			// learn the topology, without holding the hub lock.
			h.mu.Unlock()
			if err := h.refreshRoutes(ctx, gen); err != nil {
				return nil, err
			}
			if _, _, ok := h.routes.Master(slot); !ok {
				return nil, fmt.Errorf("pubsub: no cluster node serves slot %d of channel %q", slot, channel)
			}
			h.mu.Lock()
			continue
		}
		break
	}

	e := h.entries[key]
	if e != nil && e.policy != policy {
		h.mu.Unlock()
		return nil, fmt.Errorf("pubsub: channel %q is subscribed with wake policy %v, not %v", channel, e.policy, policy)
	}
	if e == nil {
		e = newEntry(key, slot, policy)
		h.entries[key] = e
		addr := ""
		if routed {
			addr, _, _ = h.routes.Master(slot)
		}
		h.assignLocked(e, h.connLocked(connKey{sharded: sharded, addr: addr}))
	}
	e.refs++
	e.setCap(e.refs)
	if e.live {
		h.mu.Unlock()
		return newSubscription(h, e), nil
	}
	p := e.pending
	// Make sure the connection goroutine is working on this channel now: it
	// may be waiting out a reconnection backoff or holding the channel back
	// after an earlier refusal.
	if c := e.conn; c != nil {
		if cs := c.chans[key.name]; cs != nil && cs.hold {
			cs.hold = false
			c.markDirtyLocked(key.name)
		}
		c.urgent = true
		c.poke()
	}
	h.mu.Unlock()

	select {
	case <-p.done:
		if p.err == nil {
			return newSubscription(h, e), nil
		}
		h.release(e)
		return nil, p.err
	case <-ctx.Done():
		h.release(e)
		return nil, ctx.Err()
	}
}

// Join returns a Subscription to channel at once, with no network round
// trip, when the channel's server subscription is live and other
// Subscriptions of it are parked in Wait; a lock waiter then queues behind
// them instead of racing them for the lock. It also returns how long the
// waiter that parked last waits at most, a bound for the newcomer's first
// Wait (negative: that waiter waits for a message with no limit). ok is
// false, and nothing is held, in every other case.
func (h *Hub) Join(channel string, sharded bool) (sub *Subscription, wait time.Duration, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.entries[chanKey{name: channel, sharded: sharded}]
	if h.closed || e == nil || !e.live {
		return nil, 0, false
	}
	if wait, ok = e.queueHint(); !ok {
		return nil, 0, false
	}
	e.refs++
	e.setCap(e.refs)
	return newSubscription(h, e), wait, true
}

// release drops one reference to e. The last reference removes the entry
// (its permits die with it) and asks the connection goroutine to unsubscribe.
func (h *Hub) release(e *entry) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e.refs--
	e.setCap(e.refs)
	if e.refs > 0 || e.gone {
		return
	}
	e.gone = true
	if h.entries[e.key] == e {
		delete(h.entries, e.key)
	}
	if p := e.pending; p != nil {
		// Nobody waits on it any more (every waiter held a reference).
		e.pending = nil
		p.complete(ErrSubscriptionClosed)
	}
	if c := e.conn; c != nil {
		if cs := c.chans[e.key.name]; cs != nil && cs.e == e {
			cs.e = nil
			c.markDirtyLocked(e.key.name)
			c.poke()
		}
	}
}

// connLocked returns the connection for key, creating it and starting its
// goroutine if needed. h.mu must be held and the hub must not be closed.
func (h *Hub) connLocked(key connKey) *subConn {
	if c := h.conns[key]; c != nil {
		return c
	}
	c := &subConn{
		h:     h,
		key:   key,
		kick:  make(chan struct{}, 1),
		chans: make(map[string]*chanState),
		dirty: make(map[string]struct{}),
	}
	h.conns[key] = c
	h.wg.Add(1)
	go c.run()
	return c
}

// assignLocked routes e to connection c. h.mu must be held.
func (h *Hub) assignLocked(e *entry, c *subConn) {
	cs := c.chans[e.key.name]
	if cs == nil {
		cs = &chanState{}
		c.chans[e.key.name] = cs
	}
	cs.e = e
	cs.hold = false
	e.conn = c
	c.markDirtyLocked(e.key.name)
	c.poke()
}

// moveLocked routes e from its current connection to the sharded
// connection of node addr. h.mu must be held.
func (h *Hub) moveLocked(e *entry, addr string) {
	if old := e.conn; old != nil {
		if cs := old.chans[e.key.name]; cs != nil && cs.e == e {
			cs.e = nil
			old.markDirtyLocked(e.key.name)
		}
	}
	if e.live {
		e.live = false
		e.pending = newAttempt()
	}
	h.assignLocked(e, h.connLocked(connKey{sharded: true, addr: addr}))
}

// dispatch delivers one message payload to the local waiters of a channel.
// It runs in a rueidis connection goroutine and never blocks on anything but
// short critical sections.
func (h *Hub) dispatch(key chanKey, payload string) {
	h.mu.Lock()
	e := h.entries[key]
	h.mu.Unlock()
	if e == nil {
		return
	}
	e.notify()
	switch e.policy {
	case WakeLock:
		if payload == unlockMessage {
			e.release()
		} else {
			e.wakeAll()
		}
	case WakeCount:
		if n, err := strconv.ParseInt(payload, 10, 64); err == nil && n > 0 {
			e.releaseCount(n)
		}
	case WakeOnZero:
		if payload == unlockMessage {
			e.wakeAll()
		}
	}
}

// WakeAll wakes every waiter of channel in this process, as a message
// other than "0" would, and sends nothing to Redis. A lock calls it when it
// made itself available to more waiters in a way that publishes nothing,
// such as a read/write lock's downgrade from write to read. It does nothing
// when the channel has no Subscription.
func (h *Hub) WakeAll(channel string, sharded bool) {
	h.mu.Lock()
	e := h.entries[chanKey{name: channel, sharded: sharded}]
	h.mu.Unlock()
	if e != nil {
		e.wakeAll()
	}
}

// unlockMessage is Redisson's UNLOCK_MESSAGE: wake one waiter.
const unlockMessage = "0"

// Policy is the rule by which a channel's messages wake its waiters:
// Redisson's, per kind of object (see Subscription.Wait for what a wake-up
// of one and a wake-up of all mean).
type Policy uint8

const (
	// WakeLock is the locks' rule: "0" wakes one waiter, any other payload
	// every waiter.
	WakeLock Policy = iota
	// WakeCount is the semaphores' rule: a payload n > 0 wakes at most n
	// waiters, storing the rest as permits; any other payload wakes nobody.
	WakeCount
	// WakeOnZero is the count-down latch's rule: "0" wakes every waiter;
	// any other payload nobody.
	WakeOnZero
)

// String returns the policy's name.
func (p Policy) String() string {
	switch p {
	case WakeLock:
		return "lock"
	case WakeCount:
		return "count"
	case WakeOnZero:
		return "on-zero"
	}
	return "Policy(" + strconv.Itoa(int(p)) + ")"
}

// reconnected tells every reconnect handler, in the order they were given.
func (h *Hub) reconnected() {
	for _, fn := range h.cfg.onReconnect {
		fn()
	}
}

// report hands err to every error handler, in the order they were given.
func (h *Hub) report(err error) {
	if err == nil {
		return
	}
	for _, fn := range h.cfg.onError {
		fn(err)
	}
}
