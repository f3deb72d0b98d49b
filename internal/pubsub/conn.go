package pubsub

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/keys"
)

// chanState is what one subscription connection knows about one channel
// routed to it. It outlives its entry until the server subscription has been
// undone. Guarded by Hub.mu.
type chanState struct {
	e            *entry // the entry that wants this subscription; nil when unwanted
	server       bool   // the server has confirmed the subscription on the current connection
	unsubPending int    // our (S)UNSUBSCRIBE pushes not yet seen by the hook
	dropped      bool   // the server dropped the subscription on its own (slot migration)
	hold         bool   // the server refused the last (S)SUBSCRIBE; retried after a backoff
}

// subConn is one dedicated subscription connection and the goroutine that
// owns it. The goroutine is the only one that sends commands on the
// connection; everybody else edits the desired state under Hub.mu, marks the
// channel dirty and pokes the goroutine, which reconciles the server state
// with the desired state in pipelined rounds.
type subConn struct {
	h    *Hub
	key  connKey
	kick chan struct{} // capacity 1: "the desired state changed"

	// Guarded by Hub.mu.
	chans  map[string]*chanState
	dirty  map[string]struct{}
	urgent bool   // a Subscribe waits for this connection: skip the backoff
	gen    uint64 // generation of the current connection; hooks of older ones are ignored
	holds  int    // channels held back after a refusal
}

// poke wakes the connection goroutine without blocking.
func (c *subConn) poke() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// markDirtyLocked queues name for the next reconciliation round. Hub.mu must
// be held.
func (c *subConn) markDirtyLocked(name string) {
	c.dirty[name] = struct{}{}
}

// describe names the connection in error messages.
func (c *subConn) describe() string {
	kind := "classic"
	if c.key.sharded {
		kind = "sharded"
	}
	if c.key.addr != "" {
		return kind + " subscription connection to " + c.key.addr
	}
	return kind + " subscription connection"
}

// dedicated is one established dedicated connection.
type dedicated struct {
	dc    rueidis.DedicatedClient
	errCh <-chan error
	addr  string // node address in cluster mode, for error messages and node rotation
}

func (d *dedicated) close() {
	// Closing (rather than returning it to the pool) drops every subscription
	// of the connection on the server at once.
	d.dc.Close()
}

// run is the connection goroutine. It exits when the hub closes, or when it
// is disconnected and no channel is routed to it any more.
func (c *subConn) run() {
	h := c.h
	defer h.wg.Done()

	var (
		conn       *dedicated
		failures   int       // consecutive failed connection attempts
		broken     bool      // a failure was reported since the last working round
		lastAddr   string    // node of the last connection, avoided next time for classic cluster connections
		holdRounds int       // consecutive rounds that ended with refused channels
		holdAt     time.Time // when refused channels are tried again
		retry      *time.Timer
	)
	defer func() {
		if retry != nil {
			retry.Stop()
		}
		if conn != nil {
			conn.close()
		}
		c.teardown(ErrClosed)
	}()

	for {
		if conn == nil {
			if c.retire() {
				return
			}
			if failures > 0 {
				if !c.backoff(h.cfg.backoff(failures)) {
					return
				}
				if c.key.sharded && h.cluster {
					c.reroute()
				}
				if c.retire() {
					return
				}
			}
			h.mu.Lock()
			c.urgent = false
			h.mu.Unlock()
			var err error
			if conn, err = c.dial(lastAddr); err != nil {
				conn = nil
				if h.ctx.Err() != nil {
					return
				}
				failures++
				broken = true
				c.teardown(err)
				h.report(err)
				continue
			}
			lastAddr = conn.addr
			holdRounds, holdAt = 0, time.Time{}
		}

		if err := c.reconcile(conn); err != nil {
			conn.close()
			conn = nil
			if h.ctx.Err() != nil {
				return
			}
			failures++
			broken = true
			err = fmt.Errorf("pubsub: %s: %w", c.describe(), err)
			c.teardown(err)
			h.report(err)
			continue
		}
		failures = 0
		if broken {
			broken = false
			h.reconnected()
		}

		var retryC <-chan time.Time
		h.mu.Lock()
		holds := c.holds
		h.mu.Unlock()
		switch {
		case holds == 0:
			holdRounds, holdAt = 0, time.Time{}
		case holdAt.IsZero():
			holdRounds++
			holdAt = time.Now().Add(h.cfg.backoff(holdRounds))
		}
		if !holdAt.IsZero() {
			if retry == nil {
				retry = time.NewTimer(time.Until(holdAt))
			} else {
				retry.Reset(time.Until(holdAt))
			}
			retryC = retry.C
		}

		select {
		case <-c.kick:
		case <-retryC:
			holdAt = time.Time{}
			c.unhold()
		case err, ok := <-conn.errCh:
			conn.close()
			conn = nil
			if h.ctx.Err() != nil {
				return
			}
			if !ok || err == nil {
				err = errors.New("connection closed")
			}
			err = fmt.Errorf("pubsub: %s lost: %w", c.describe(), err)
			broken = true
			c.teardown(err)
			h.report(err)
			// failures stays 0: the first reconnection is immediate.
		case <-h.ctx.Done():
			return
		}
		if retry != nil {
			retry.Stop()
		}
	}
}

// retire reports whether the goroutine should exit because the hub closed
// or nothing is routed to this (disconnected) connection; it then removes
// the connection from the hub, so that a later Subscribe starts a new one.
func (c *subConn) retire() bool {
	h := c.h
	h.mu.Lock()
	defer h.mu.Unlock()
	// Disconnected, the server holds nothing for us: forget unwanted channels.
	for name, cs := range c.chans {
		if cs.e == nil {
			delete(c.chans, name)
			delete(c.dirty, name)
		}
	}
	if h.ctx.Err() == nil && len(c.chans) > 0 {
		return false
	}
	if h.conns[c.key] == c {
		delete(h.conns, c.key)
	}
	return true
}

// backoff waits d, or less when a Subscribe is waiting for this connection.
// It reports false when the hub closed.
func (c *subConn) backoff(d time.Duration) bool {
	h := c.h
	if d <= 0 {
		return h.ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return true
		case <-h.ctx.Done():
			return false
		case <-c.kick:
			h.mu.Lock()
			urgent := c.urgent
			h.mu.Unlock()
			if urgent {
				return true
			}
		}
	}
}

// dial establishes a dedicated connection for c and installs the hooks.
func (c *subConn) dial(avoid string) (*dedicated, error) {
	h := c.h
	client := h.rc
	addr := ""
	if h.cluster {
		nodes := h.rc.Nodes()
		if c.key.sharded {
			addr = c.key.addr
			n, ok := nodes[addr]
			if !ok {
				return nil, fmt.Errorf("pubsub: %s: node unknown to the client", c.describe())
			}
			client = n
		} else {
			// Classic pub/sub is broadcast to every node of a cluster, so any
			// node will do; move away from the last one, which may be gone.
			addrs := make([]string, 0, len(nodes))
			for a := range nodes {
				if a != avoid {
					addrs = append(addrs, a)
				}
			}
			if len(addrs) == 0 {
				addrs = append(addrs, avoid)
			}
			addr = addrs[rand.IntN(len(addrs))]
			n, ok := nodes[addr]
			if !ok {
				return nil, fmt.Errorf("pubsub: %s: no cluster node known to the client", c.describe())
			}
			client = n
		}
	}

	h.mu.Lock()
	h.nextGen++
	gen := h.nextGen
	h.mu.Unlock()

	// Dedicate dials at once and cannot be interrupted; it is bounded by the
	// client's dial timeout.
	dc, _ := client.Dedicate()
	sharded := c.key.sharded
	errCh := dc.SetPubSubHooks(rueidis.PubSubHooks{
		OnMessage: func(m rueidis.PubSubMessage) {
			h.dispatch(chanKey{name: m.Channel, sharded: sharded}, m.Message)
		},
		OnSubscription: func(s rueidis.PubSubSubscription) {
			c.onSubscription(gen, s)
		},
	})
	conn := &dedicated{dc: dc, errCh: errCh, addr: addr}
	// A connection that could not be dialled reports its error at once.
	select {
	case err, ok := <-errCh:
		conn.close()
		if !ok || err == nil {
			err = errors.New("connection closed")
		}
		return nil, fmt.Errorf("pubsub: %s: %w", c.describe(), err)
	default:
	}

	h.mu.Lock()
	c.gen = gen
	for name := range c.chans {
		c.markDirtyLocked(name)
	}
	h.mu.Unlock()
	return conn, nil
}

// onSubscription runs in the rueidis connection goroutine for every
// (un)subscribe push. It recognises unsubscriptions the server made on its
// own (Redis drops sharded subscriptions of a slot that migrated away).
func (c *subConn) onSubscription(gen uint64, s rueidis.PubSubSubscription) {
	if s.Kind != "unsubscribe" && s.Kind != "sunsubscribe" {
		return
	}
	h := c.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if c.gen != gen {
		return
	}
	cs := c.chans[s.Channel]
	if cs == nil {
		return
	}
	if cs.unsubPending > 0 {
		cs.unsubPending--
		return
	}
	cs.dropped = true
	c.markDirtyLocked(s.Channel)
	c.poke()
}

// teardown forgets the server state of a connection that is gone. Channels
// that were live wait for a resubscription; Subscribe calls waiting for a
// confirmation get err.
func (c *subConn) teardown(err error) {
	h := c.h
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nextGen++
	c.gen = h.nextGen
	c.holds = 0
	for name, cs := range c.chans {
		if cs.e == nil {
			delete(c.chans, name)
			delete(c.dirty, name)
			continue
		}
		cs.server, cs.unsubPending, cs.dropped, cs.hold = false, 0, false, false
		e := cs.e
		if e.live {
			e.live = false
			e.pending = newAttempt()
		} else if e.pending != nil {
			e.pending.complete(err)
			e.pending = newAttempt()
		}
		c.markDirtyLocked(name)
	}
}

// reroute moves the channels of a sharded cluster connection whose slots
// another node owns now, after refreshing the topology.
func (c *subConn) reroute() {
	h := c.h
	if err := h.refreshRoutes(h.ctx, h.routes.Generation()); err != nil {
		if h.ctx.Err() == nil {
			h.report(err)
		}
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	for _, cs := range c.chans {
		if e := cs.e; e != nil {
			if addr, _, ok := h.routes.Master(e.slot); ok && addr != c.key.addr {
				h.moveLocked(e, addr)
			}
		}
	}
}

// unhold makes the channels held back after a refusal eligible again.
func (c *subConn) unhold() {
	h := c.h
	h.mu.Lock()
	defer h.mu.Unlock()
	for name, cs := range c.chans {
		if cs.hold {
			cs.hold = false
			c.markDirtyLocked(name)
		}
	}
	c.holds = 0
}

// round is one reconciliation round: what to send, and for which channels.
type round struct {
	cmds  rueidis.Commands
	names [][]string // channels of each command
	unsub []bool     // whether each command is an (S)UNSUBSCRIBE
}

// reconcile brings the server state of conn in line with the desired state
// of the dirty channels, in rounds of pipelined commands, until nothing is
// dirty. It returns an error only when the connection failed.
func (c *subConn) reconcile(conn *dedicated) error {
	h := c.h
	for {
		r, ok := c.plan(conn.dc.B())
		if !ok {
			return nil
		}
		if len(r.cmds) == 0 {
			continue
		}
		if hook := h.testHookBeforeSend; hook != nil {
			hook()
		}
		results := conn.dc.DoMulti(h.ctx, r.cmds...)
		if err := c.apply(&r, results); err != nil {
			return err
		}
	}
}

// plan decides one round under Hub.mu. It reports false when nothing is
// dirty.
func (c *subConn) plan(b rueidis.Builder) (round, bool) {
	h := c.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(c.dirty) == 0 {
		return round{}, false
	}
	var subs, unsubs []string
	for name := range c.dirty {
		if len(subs)+len(unsubs) == maxChannelsPerRound {
			break
		}
		delete(c.dirty, name)
		cs := c.chans[name]
		if cs == nil {
			continue
		}
		if cs.dropped {
			cs.dropped = false
			cs.server = false
			if e := cs.e; e != nil && e.live {
				e.live = false
				e.pending = newAttempt()
			}
		}
		switch {
		case cs.e != nil && cs.server:
			// Wanted again before the UNSUBSCRIBE was sent: still live.
			c.confirmLocked(cs.e)
		case cs.e != nil && !cs.hold:
			subs = append(subs, name)
		case cs.e == nil && cs.server:
			cs.unsubPending++
			unsubs = append(unsubs, name)
		case cs.e == nil:
			delete(c.chans, name)
		}
	}
	// Deterministic order makes the commands easy to read in MONITOR.
	slices.Sort(subs)
	slices.Sort(unsubs)

	var r round
	if c.key.sharded {
		// One command per channel: channels of different slots cannot share
		// an SSUBSCRIBE, and the cluster builder checks it.
		for _, name := range subs {
			r.add(b.Ssubscribe().Channel(name).Build(), []string{name}, false)
		}
		for _, name := range unsubs {
			r.add(b.Sunsubscribe().Channel(name).Build(), []string{name}, true)
		}
	} else {
		for chunk := range slices.Chunk(subs, maxChannelsPerCommand) {
			r.add(b.Subscribe().Channel(chunk...).Build(), chunk, false)
		}
		for chunk := range slices.Chunk(unsubs, maxChannelsPerCommand) {
			r.add(b.Unsubscribe().Channel(chunk...).Build(), chunk, true)
		}
	}
	return r, true
}

func (r *round) add(cmd rueidis.Completed, names []string, unsub bool) {
	r.cmds = append(r.cmds, cmd)
	r.names = append(r.names, names)
	r.unsub = append(r.unsub, unsub)
}

// confirmLocked makes e live. Hub.mu must be held.
func (c *subConn) confirmLocked(e *entry) {
	if e.live || e.conn != c {
		return
	}
	e.live = true
	if p := e.pending; p != nil {
		e.pending = nil
		p.complete(nil)
	}
	if e.wasLive {
		// Messages published while the channel was not subscribed were
		// lost: let every waiter re-check.
		e.wakeAll()
	}
	e.wasLive = true
}

// apply records the outcome of one round under Hub.mu. It returns the
// connection error, if the connection failed.
func (c *subConn) apply(r *round, results []rueidis.RedisResult) error {
	h := c.h
	var refused []error
	h.mu.Lock()
	var connErr error
	for i, res := range results {
		err := res.Error()
		if err != nil {
			if _, ok := rueidis.IsRedisErr(err); !ok {
				// Not a server reply: the connection failed (or the hub is
				// closing); teardown takes care of every channel.
				connErr = err
				break
			}
		}
		for _, name := range r.names[i] {
			cs := c.chans[name]
			if cs == nil {
				continue
			}
			if r.unsub[i] {
				// Whatever the reply, the server no longer delivers this
				// channel here (an error means it was not subscribed).
				cs.server = false
				if cs.e != nil {
					c.markDirtyLocked(name)
				} else {
					delete(c.chans, name)
				}
				continue
			}
			if err == nil {
				cs.server = true
				if cs.e != nil {
					c.confirmLocked(cs.e)
				} else {
					// Nobody wants it any more: undo it in the next round.
					c.markDirtyLocked(name)
				}
				continue
			}
			if rerr, _ := rueidis.IsRedisErr(err); rerr != nil {
				if addr, moved := rerr.IsMoved(); moved && h.cluster && c.key.sharded && addr != c.key.addr {
					h.routes.Learn(keys.Slot(name), addr)
					if cs.e != nil && !h.closed {
						h.moveLocked(cs.e, addr)
					}
					if !cs.server && cs.e == nil {
						delete(c.chans, name)
					}
					continue
				}
			}
			// Refused (ACL, unknown command, cluster down, ...): fail the
			// Subscribe calls waiting for it and retry after a backoff.
			err := fmt.Errorf("pubsub: %s: subscribe %q: %w", c.describe(), name, err)
			refused = append(refused, err)
			if cs.e == nil {
				delete(c.chans, name)
				continue
			}
			cs.hold = true
			c.holds++
			if e := cs.e; e.pending != nil {
				e.pending.complete(err)
				e.pending = newAttempt()
			}
		}
	}
	h.mu.Unlock()
	for _, err := range refused {
		h.report(err)
	}
	return connErr
}
