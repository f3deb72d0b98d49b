package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxDelay bounds the delays Delay and DelayReplyTo accept.
const maxDelay = 24 * time.Hour

// checkDelay returns an error unless d and jitter are in [0, maxDelay].
func checkDelay(op string, d, jitter time.Duration) error {
	if d < 0 || jitter < 0 || d > maxDelay || jitter > maxDelay {
		return fmt.Errorf("faultproxy: %s(%v, %v): durations must be between 0 and %v", op, d, jitter, maxDelay)
	}
	return nil
}

// dialTimeout bounds the dial of the target for one client connection.
const dialTimeout = 5 * time.Second

// acceptRetry is the pause after an Accept error other than a closed
// listener (running out of file descriptors, for example).
const acceptRetry = 10 * time.Millisecond

// A Proxy forwards TCP connections from its own loopback address to one
// Redis server and injects the faults its methods turn on. Its methods are
// safe for concurrent use, and a mode applies at once to the connections
// that are open and to those that come later.
type Proxy struct {
	target string
	ln     net.Listener
	cancel context.CancelFunc // ends dials in progress
	wg     sync.WaitGroup     // every goroutine of the proxy

	modeMu sync.Mutex // serializes writers of modes
	modes  atomic.Pointer[modes]

	mu     sync.Mutex // guards conns and closed
	conns  map[*conn]struct{}
	closed bool

	closeOnce sync.Once
	closeErr  error

	stats counters
}

// modes is one immutable snapshot of the faults in force. Setters copy
// it, change the copy and publish it.
type modes struct {
	blackhole  bool
	refuse     bool
	halfOpen   bool
	dropPushes bool
	delay      jittered
	delayRule  *delayRule
	dropRule   *dropRule
	rejects    map[string][]byte // upper-case command name → error frame
}

// jittered is a delay of d ± jitter.
type jittered struct{ d, jitter time.Duration }

// pick returns a delay drawn uniformly from [d-jitter, d+jitter], never
// negative.
func (j jittered) pick() time.Duration {
	d := j.d
	if j.jitter > 0 {
		d += time.Duration(rand.Int64N(int64(2*j.jitter)+1)) - j.jitter
	}
	return max(d, 0)
}

// delayRule delays the replies to the commands pred matches.
type delayRule struct {
	pred  func([]string) bool
	delay jittered
}

// dropRule drops the replies to the next commands pred matches.
type dropRule struct {
	pred func([]string) bool
	left atomic.Int64 // matches still to drop; negative: every match
}

// take reports whether one more match may be dropped, and counts it.
func (r *dropRule) take() bool {
	for {
		n := r.left.Load()
		if n < 0 {
			return true
		}
		if n == 0 {
			return false
		}
		if r.left.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// counters are the live counts behind Stats.
type counters struct {
	connections, refused, commands          atomic.Int64
	repliesDropped, pushesDropped, rejected atomic.Int64
	resets                                  atomic.Int64
}

// Stats counts what a Proxy has done since it started.
type Stats struct {
	// Connections is the number of client connections accepted and
	// forwarded (Refuse's are not counted here).
	Connections int64
	// Active is the number of client connections open now.
	Active int
	// Refused is the number of connections closed at once by Refuse.
	Refused int64
	// Commands is the number of commands read from clients, including
	// those rejected or swallowed.
	Commands int64
	// RepliesDropped counts replies (and subscription confirmations) that
	// were not delivered: by DropReplyTo, HalfOpen and Blackhole.
	RepliesDropped int64
	// PushesDropped counts pub/sub messages and other pushes that were not
	// delivered: by DropPushes, HalfOpen and Blackhole.
	PushesDropped int64
	// Rejected counts commands answered by Reject.
	Rejected int64
	// Resets counts connections the proxy ended on purpose: by Reset,
	// ResetSubscribers, DropReplyTo, and after a Blackhole or HalfOpen that
	// lost replies.
	Resets int64
}

// Start listens on a free port of 127.0.0.1 and forwards every connection
// made to it to target ("host:port"). The target is dialed once per client
// connection, when the client connects; it need not be up when Start is
// called. Close releases everything Start acquired.
func Start(target string) (*Proxy, error) {
	if _, _, err := net.SplitHostPort(target); err != nil {
		return nil, fmt.Errorf("faultproxy: target %q is not host:port: %w", target, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{target: target, ln: ln, cancel: cancel, conns: make(map[*conn]struct{})}
	p.modes.Store(&modes{})
	p.wg.Add(1)
	go p.accept(ctx)
	return p, nil
}

// Addr returns the address clients connect to, "127.0.0.1:port".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target returns the server address the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// Close stops accepting, closes every connection and returns once every
// goroutine of the proxy has exited. It is safe to call more than once;
// later calls return what the first returned.
func (p *Proxy) Close() error {
	p.closeOnce.Do(func() {
		p.cancel()
		p.closeErr = p.ln.Close()
		p.mu.Lock()
		p.closed = true
		conns := p.snapshotLocked()
		p.mu.Unlock()
		for _, c := range conns {
			c.shutdown()
		}
		p.wg.Wait()
	})
	return p.closeErr
}

// accept runs until the listener is closed.
func (p *Proxy) accept(ctx context.Context) {
	defer p.wg.Done()
	for {
		nc, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			t := time.NewTimer(acceptRetry)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		tc := nc.(*net.TCPConn)
		if p.modes.Load().refuse {
			p.stats.refused.Add(1)
			_ = tc.SetLinger(0)
			_ = tc.Close()
			continue
		}
		c := newConn(p, tc)
		if !p.register(c) {
			_ = tc.Close()
			return
		}
		p.stats.connections.Add(1)
		p.wg.Add(1)
		go c.run(ctx)
	}
}

// register adds c to the open connections unless the proxy is closed.
func (p *Proxy) register(c *conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

// unregister removes c from the open connections.
func (p *Proxy) unregister(c *conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// snapshot returns the open connections.
func (p *Proxy) snapshot() []*conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.snapshotLocked()
}

func (p *Proxy) snapshotLocked() []*conn {
	out := make([]*conn, 0, len(p.conns))
	for c := range p.conns {
		out = append(out, c)
	}
	return out
}

// update publishes a changed copy of the modes.
func (p *Proxy) update(change func(m *modes)) {
	p.modeMu.Lock()
	defer p.modeMu.Unlock()
	m := *p.modes.Load()
	change(&m)
	p.modes.Store(&m)
}

// heal ends the connections that lost a reply or a command while a
// Blackhole or HalfOpen was on, now that neither is: a later reply would
// reach the client as the answer to the wrong command.
func (p *Proxy) heal() {
	for _, c := range p.snapshot() {
		c.endIfDesynced()
	}
}

// Blackhole turns a partition on or off. While it is on, bytes in both
// directions are read and discarded, and connections stay open: clients
// see no reply and no error, and commands do not reach the server (new
// connections are accepted too, and hang the same way). When it is turned
// off, every connection that lost a command or a reply is ended (the
// client reads end-of-file), because TCP never loses bytes from the middle
// of a stream: those clients could not match later replies to their
// commands. Connections that were idle meanwhile carry on.
func (p *Proxy) Blackhole(on bool) {
	p.update(func(m *modes) { m.blackhole = on })
	if !on {
		p.heal()
	}
}

// Refuse turns refusal of new connections on or off. While it is on, each
// new connection is accepted and closed at once with a reset. Connections
// already open are not affected.
func (p *Proxy) Refuse(on bool) {
	p.update(func(m *modes) { m.refuse = on })
}

// HalfOpen turns a one-way failure on or off. While it is on, commands
// reach the server and run, but their replies and every push are
// discarded. When it is turned off, connections that lost a reply are
// ended, as with Blackhole.
func (p *Proxy) HalfOpen(on bool) {
	p.update(func(m *modes) { m.halfOpen = on })
	if !on {
		p.heal()
	}
}

// DropPushes turns on or off the discarding of pub/sub messages: RESP3
// push frames and, on a subscribed RESP2 connection, arrays whose first
// element is "message", "smessage" or "pmessage". Subscription
// confirmations are still delivered.
func (p *Proxy) DropPushes(on bool) {
	p.update(func(m *modes) { m.dropPushes = on })
}

// Delay holds back every frame from the server (replies, pushes, and the
// errors of Reject) for d ± jitter, drawn per frame, before writing it to
// the client. Frames keep their order: one that is due earlier than the
// frame before it waits for that one. Delay(0, 0) turns the delay off. A
// negative d or jitter, or one above 24 hours, is an error.
func (p *Proxy) Delay(d, jitter time.Duration) error {
	if err := checkDelay("Delay", d, jitter); err != nil {
		return err
	}
	p.update(func(m *modes) { m.delay = jittered{d, jitter} })
	return nil
}

// DelayReplyTo holds back the replies to the commands pred matches for
// d ± jitter, on top of any Delay; later frames on the same connection
// wait behind them. pred sees each command as sent (cmd[0] is its name)
// when the proxy reads it; it must be safe for concurrent use and must not
// keep cmd. A nil pred, or d and jitter both 0, removes the rule; a new
// rule replaces the old one. Durations are checked as for Delay.
func (p *Proxy) DelayReplyTo(pred func(cmd []string) bool, d, jitter time.Duration) error {
	if err := checkDelay("DelayReplyTo", d, jitter); err != nil {
		return err
	}
	var r *delayRule
	if pred != nil && (d > 0 || jitter > 0) {
		r = &delayRule{pred: pred, delay: jittered{d, jitter}}
	}
	p.update(func(m *modes) { m.delayRule = r })
	return nil
}

// DropReplyTo loses the replies to the next n commands that pred matches,
// or to every match if n is negative. Such a command is forwarded and runs
// on the server; when its reply arrives, the proxy discards it, delivers
// the replies that came before it, and ends the client connection (the
// client reads end-of-file) without forwarding anything more on it. That
// is the only way a single reply can be lost on a TCP stream without the
// client taking a later reply for it. pred is called as for DelayReplyTo.
// A nil pred or n == 0 removes the rule; a new rule replaces the old one.
func (p *Proxy) DropReplyTo(pred func(cmd []string) bool, n int) {
	var r *dropRule
	if pred != nil && n != 0 {
		r = &dropRule{pred: pred}
		r.left.Store(int64(max(n, -1)))
	}
	p.update(func(m *modes) { m.dropRule = r })
}

// Reject makes the proxy answer command (a command name such as "WAIT" or
// "SSUBSCRIBE", in any case) with the error reply errMsg, for example
// "ERR unknown command 'WAIT'", instead of forwarding it. The error
// reaches the client in its place among the replies to pipelined
// commands. An empty errMsg removes the rule. The command name must be one
// word, and neither may contain CR or LF.
func (p *Proxy) Reject(command, errMsg string) error {
	if command == "" || strings.ContainsAny(command, " \t\r\n") {
		return fmt.Errorf("faultproxy: Reject: %q is not a command name", command)
	}
	if strings.ContainsAny(errMsg, "\r\n") {
		return fmt.Errorf("faultproxy: Reject(%q): the error message must be one line", command)
	}
	name := strings.ToUpper(command)
	p.update(func(m *modes) {
		rejects := make(map[string][]byte, len(m.rejects)+1)
		for k, v := range m.rejects {
			rejects[k] = v
		}
		if errMsg == "" {
			delete(rejects, name)
		} else {
			rejects[name] = []byte("-" + errMsg + "\r\n")
		}
		m.rejects = rejects
	})
	return nil
}

// Reset aborts every open connection: the client sees a connection reset
// (ECONNRESET), the server a closed connection. It returns how many
// connections it aborted.
func (p *Proxy) Reset() int {
	n := 0
	for _, c := range p.snapshot() {
		if c.reset() {
			n++
		}
	}
	return n
}

// ResetSubscribers aborts, as Reset does, only the connections that have
// sent SUBSCRIBE, SSUBSCRIBE or PSUBSCRIBE, and returns how many it
// aborted.
func (p *Proxy) ResetSubscribers() int {
	n := 0
	for _, c := range p.snapshot() {
		if c.isSubscriber() && c.reset() {
			n++
		}
	}
	return n
}

// Stats returns the proxy's counters.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	active := len(p.conns)
	p.mu.Unlock()
	return Stats{
		Connections:    p.stats.connections.Load(),
		Active:         active,
		Refused:        p.stats.refused.Load(),
		Commands:       p.stats.commands.Load(),
		RepliesDropped: p.stats.repliesDropped.Load(),
		PushesDropped:  p.stats.pushesDropped.Load(),
		Rejected:       p.stats.rejected.Load(),
		Resets:         p.stats.resets.Load(),
	}
}
