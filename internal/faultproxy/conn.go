package faultproxy

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"time"
)

const (
	// ioBuffer is the size of each bufio buffer of a connection.
	ioBuffer = 32 << 10
	// maxQueued is how many bytes of replies may wait for the client
	// before the proxy stops reading from the server.
	maxQueued = 8 << 20
)

// family is a kind of pub/sub subscription.
type family int8

const (
	noFamily family = iota
	channels        // SUBSCRIBE
	patterns        // PSUBSCRIBE
	shards          // SSUBSCRIBE
	families
)

// subCommand describes a command that changes subscriptions.
type subCommand struct {
	confirm string // the first element of its confirmations
	fam     family
	sub     bool // subscribes (rather than unsubscribes)
}

// subCommands are the commands answered by one confirmation per argument
// (or, for an unsubscribe without arguments, one per subscription of its
// family, at least one) instead of by a reply.
var subCommands = map[string]subCommand{
	"SUBSCRIBE":    {"subscribe", channels, true},
	"UNSUBSCRIBE":  {"unsubscribe", channels, false},
	"PSUBSCRIBE":   {"psubscribe", patterns, true},
	"PUNSUBSCRIBE": {"punsubscribe", patterns, false},
	"SSUBSCRIBE":   {"ssubscribe", shards, true},
	"SUNSUBSCRIBE": {"sunsubscribe", shards, false},
}

// confirmKinds maps the first element of a confirmation to its command.
var confirmKinds = func() map[string]subCommand {
	m := make(map[string]subCommand, len(subCommands))
	for _, sc := range subCommands {
		m[sc.confirm] = sc
	}
	return m
}()

// messageKinds are the first elements of pub/sub messages.
var messageKinds = map[string]bool{"message": true, "smessage": true, "pmessage": true}

// kind classifies a frame from the server.
type kind int8

const (
	reply   kind = iota // answers the oldest pending command
	message             // a pub/sub message
	confirm             // a (un)subscribe confirmation
	push                // any other push (invalidate, for example)
)

// pending is a command forwarded (or rejected) whose reply has not been
// delivered yet.
type pending struct {
	synth   []byte   // the reply to write in its turn (a rejected command)
	confirm string   // for a subscription command: its confirmations' kind
	want    int      // confirmations still due; -1: not known yet
	hello   int      // the protocol a HELLO asked for, or 0
	reset   bool     // a RESET
	drop    bool     // DropReplyTo chose it
	delay   jittered // from DelayReplyTo
	fam     family   // for a subscription command
}

// conn is one client connection and its connection to the server. Three
// goroutines serve it: run (client to server), fromServer (server to the
// queue) and writer (queue to client).
type conn struct {
	p      *Proxy
	client *net.TCPConn
	done   chan struct{} // closed by shutdown
	out    outQueue

	mu         sync.Mutex
	server     *net.TCPConn // nil until dialed
	closed     bool
	pend       []pending // pend[head:] await their replies, oldest first
	head       int
	proto      int // 2 or 3
	subs       [families]map[string]struct{}
	subscriber bool // has sent a subscribing command
	desync     bool // a reply or a command was lost while the conn stayed open
	ending     bool // an end item is queued; nothing more is forwarded
}

func newConn(p *Proxy, client *net.TCPConn) *conn {
	return &conn{
		p:      p,
		client: client,
		done:   make(chan struct{}),
		proto:  2,
		out:    outQueue{ready: make(chan struct{}, 1), room: make(chan struct{}, 1)},
	}
}

// run dials the server, starts the other two goroutines and forwards
// commands until the client goes away. ctx is the proxy's lifetime.
func (c *conn) run(ctx context.Context) {
	defer c.p.wg.Done()
	defer c.shutdown()
	d := net.Dialer{Timeout: dialTimeout}
	nc, err := d.DialContext(ctx, "tcp", c.p.target)
	if err != nil {
		return
	}
	server := nc.(*net.TCPConn)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		_ = server.Close()
		return
	}
	c.server = server
	c.mu.Unlock()
	c.p.wg.Add(2)
	go c.fromServer(server)
	go c.writer()
	c.fromClient(server)
}

// fromClient reads commands and forwards those admitted, flushing when no
// more input is buffered so that pipelines stay pipelines.
func (c *conn) fromClient(server *net.TCPConn) {
	fr := frameReader{r: bufio.NewReaderSize(c.client, ioBuffer)}
	bw := bufio.NewWriterSize(server, ioBuffer)
	serverGone := false
	for {
		args, err := fr.command()
		if err != nil {
			return
		}
		if c.admit(args) && !serverGone {
			if _, err := bw.Write(fr.buf); err != nil {
				serverGone = true // fromServer sees it too and ends the conn
			}
		}
		if fr.r.Buffered() == 0 && bw.Buffered() > 0 && !serverGone {
			if err := bw.Flush(); err != nil {
				serverGone = true
			}
		}
	}
}

// admit records a command read from the client and reports whether to
// forward it.
func (c *conn) admit(args []string) bool {
	m := c.p.modes.Load()
	if len(args) == 0 {
		c.mu.Lock()
		defer c.mu.Unlock()
		return !c.ending && !c.p.modes.Load().blackhole
	}
	// Predicates are the caller's code: run them outside the lock.
	dropMatch := m.dropRule != nil && m.dropRule.pred(args)
	delayMatch := m.delayRule != nil && m.delayRule.pred(args)
	name := strings.ToUpper(args[0])

	c.mu.Lock()
	defer c.mu.Unlock()
	// Counted under the lock, with the decision: a test that sees the
	// count change knows the command's fate is settled.
	c.p.stats.commands.Add(1)
	now := c.p.modes.Load()
	switch {
	case c.ending:
		return false
	case now.blackhole:
		c.desync = true
		return false
	}
	if errFrame, ok := now.rejects[name]; ok {
		c.p.stats.rejected.Add(1)
		if c.head == len(c.pend) {
			c.deliverSynthLocked(now, errFrame)
		} else {
			c.pushPending(pending{synth: errFrame})
		}
		return false
	}
	e := pending{}
	if sc, ok := subCommands[name]; ok {
		e.confirm, e.fam, e.want = sc.confirm, sc.fam, len(args)-1
		if sc.sub {
			c.subscriber = true
		} else if e.want == 0 {
			e.want = -1
		}
	}
	switch name {
	case "HELLO":
		if len(args) > 1 && (args[1] == "2" || args[1] == "3") {
			e.hello = int(args[1][0] - '0')
		}
	case "RESET":
		e.reset = true
	}
	if dropMatch && m.dropRule.take() {
		e.drop = true
	}
	if delayMatch {
		e.delay = m.delayRule.delay
	}
	c.pushPending(e)
	return true
}

// fromServer reads frames from the server and hands each to handle.
func (c *conn) fromServer(server *net.TCPConn) {
	defer c.p.wg.Done()
	fr := frameReader{r: bufio.NewReaderSize(server, ioBuffer)}
	for {
		f, err := fr.reply()
		if err != nil {
			c.mu.Lock()
			c.endLocked(false) // deliver what is queued, then end
			c.mu.Unlock()
			return
		}
		if !c.handle(&f) {
			return
		}
		c.out.waitRoom(c.done)
	}
}

// handle matches one frame from the server with its command and queues,
// drops or withholds it as the modes say. It returns false when nothing
// more is to be read from the server.
func (c *conn) handle(f *frame) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ending || c.closed {
		return false
	}
	m := c.p.modes.Load()
	k := c.classifyLocked(f)

	var e pending // the command this frame answers, if any
	matched, done := false, false
	switch k {
	case reply:
		if c.head < len(c.pend) {
			e, matched, done = c.pend[c.head], true, true
			if !f.isError() {
				c.applyLocked(&e)
			}
		}
	case confirm:
		matched, done = c.confirmLocked(f, &e)
	}

	switch {
	case m.blackhole || m.halfOpen:
		if k == reply || k == confirm {
			c.p.stats.repliesDropped.Add(1)
			c.desync = true
		} else {
			c.p.stats.pushesDropped.Add(1)
		}
	case matched && e.drop:
		c.p.stats.repliesDropped.Add(1)
		c.endLocked(true)
		return false
	case k == message && m.dropPushes:
		c.p.stats.pushesDropped.Add(1)
	case c.desync:
		c.endLocked(true)
		return false
	default:
		d := m.delay.pick()
		if matched {
			d += e.delay.pick()
		}
		c.out.push(outItem{data: bytes.Clone(f.raw), due: dueAt(d)})
	}
	if done {
		c.pop()
		for c.head < len(c.pend) && c.pend[c.head].synth != nil && !c.ending {
			synth := c.pend[c.head].synth
			c.pop()
			c.deliverSynthLocked(m, synth)
		}
	}
	return !c.ending
}

// classifyLocked tells a reply from the pushes. RESP3 marks pushes; on a
// RESP2 connection that is (or is becoming) subscribed, pushes are arrays
// whose first element names their kind.
func (c *conn) classifyLocked(f *frame) kind {
	switch {
	case f.typ == '>':
	case f.typ == '*' && c.proto != 3 && (c.subscribedLocked() || c.headIsSubLocked()):
		if s := f.elems[0]; s.start < 0 || !isPushKind(f.raw[s.start:s.end]) {
			return reply
		}
	default:
		return reply
	}
	s := f.elems[0]
	if s.start < 0 {
		return push
	}
	name := f.raw[s.start:s.end]
	if messageKinds[string(name)] {
		return message
	}
	if _, ok := confirmKinds[string(name)]; ok {
		return confirm
	}
	return push
}

// isPushKind reports whether a RESP2 array starting with name is a push.
func isPushKind(name []byte) bool {
	if messageKinds[string(name)] {
		return true
	}
	_, ok := confirmKinds[string(name)]
	return ok
}

// confirmLocked records a subscription confirmation. If it answers the
// oldest pending command, it copies that command to e and reports
// matched, and done once it is the command's last confirmation.
func (c *conn) confirmLocked(f *frame, e *pending) (matched, done bool) {
	kindName, _ := f.elem(0)
	sc := confirmKinds[kindName]
	set := &c.subs[sc.fam]
	if c.head < len(c.pend) && c.pend[c.head].confirm == kindName {
		h := &c.pend[c.head]
		if h.want < 0 {
			h.want = max(1, len(*set)) // an unsubscribe from everything
		}
		h.want--
		*e, matched, done = *h, true, h.want <= 0
	}
	if ch, ok := f.elem(1); ok {
		if sc.sub {
			if *set == nil {
				*set = make(map[string]struct{})
			}
			(*set)[ch] = struct{}{}
		} else {
			delete(*set, ch)
		}
	}
	return matched, done
}

// applyLocked applies what a successful reply to e changes on the
// connection: the protocol after HELLO, everything after RESET.
func (c *conn) applyLocked(e *pending) {
	if e.hello != 0 {
		c.proto = e.hello
	}
	if e.reset {
		c.proto = 2
		c.subs = [families]map[string]struct{}{}
	}
}

// subscribedLocked reports whether the connection has subscriptions.
func (c *conn) subscribedLocked() bool {
	return len(c.subs[channels])+len(c.subs[patterns])+len(c.subs[shards]) > 0
}

// headIsSubLocked reports whether the oldest pending command changes
// subscriptions.
func (c *conn) headIsSubLocked() bool {
	return c.head < len(c.pend) && c.pend[c.head].fam != noFamily
}

// deliverSynthLocked queues the error frame of a rejected command whose
// turn has come.
func (c *conn) deliverSynthLocked(m *modes, frame []byte) {
	switch {
	case m.blackhole || m.halfOpen:
		c.p.stats.repliesDropped.Add(1)
		c.desync = true
	case c.desync:
		c.endLocked(true)
	default:
		c.out.push(outItem{data: frame, due: dueAt(m.delay.pick())})
	}
}

// dueAt returns when a frame delayed by d is due; the zero time if d is 0.
func dueAt(d time.Duration) time.Time {
	if d <= 0 {
		return time.Time{}
	}
	return time.Now().Add(d)
}

// pushPending appends e to the pending commands.
func (c *conn) pushPending(e pending) {
	if c.head > 0 && len(c.pend) == cap(c.pend) {
		n := copy(c.pend, c.pend[c.head:])
		clear(c.pend[n:])
		c.pend, c.head = c.pend[:n], 0
	}
	c.pend = append(c.pend, e)
}

// pop removes the oldest pending command.
func (c *conn) pop() {
	c.pend[c.head] = pending{}
	c.head++
	if c.head == len(c.pend) {
		c.pend, c.head = c.pend[:0], 0
	}
}

// endLocked queues the end of the connection after the frames already
// queued; purposely marks an end the proxy chose (counted in Resets).
func (c *conn) endLocked(purposely bool) {
	if c.ending || c.closed {
		return
	}
	c.ending = true
	if purposely {
		c.p.stats.resets.Add(1)
	}
	c.out.push(outItem{end: true})
}

// endIfDesynced ends the connection if it lost a reply or a command.
func (c *conn) endIfDesynced() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.desync {
		c.endLocked(true)
	}
}

// isSubscriber reports whether the open connection has sent a subscribing
// command.
func (c *conn) isSubscriber() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.subscriber && !c.closed
}

// reset aborts the connection with a TCP reset to the client, and reports
// whether it was still open.
func (c *conn) reset() bool {
	if !c.close(true) {
		return false
	}
	c.p.stats.resets.Add(1)
	return true
}

// shutdown closes both sockets at once.
func (c *conn) shutdown() { c.close(false) }

// close closes both sockets, with a reset to the client if rst, and
// reports whether this call closed them.
func (c *conn) close(rst bool) bool {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return false
	}
	c.closed = true
	server := c.server
	c.mu.Unlock()
	close(c.done)
	if rst {
		_ = c.client.SetLinger(0)
	}
	_ = c.client.Close()
	if server != nil {
		_ = server.Close()
	}
	c.p.unregister(c)
	return true
}

// writer writes queued frames to the client, each when it is due, in
// order. After an end item it flushes, closes the server side and shuts
// the client's read side with a FIN; the client then reads end-of-file
// after the last delivered reply, and run ends the connection when the
// client closes it.
func (c *conn) writer() {
	defer c.p.wg.Done()
	bw := bufio.NewWriterSize(c.client, ioBuffer)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		items, ok := c.out.take(c.done)
		if !ok {
			return
		}
		for _, it := range items {
			if wait := time.Until(it.due); !it.due.IsZero() && wait > 0 {
				if bw.Flush() != nil {
					c.shutdown()
					return
				}
				if timer == nil {
					timer = time.NewTimer(wait)
				} else {
					timer.Reset(wait)
				}
				select {
				case <-timer.C:
				case <-c.done:
					return
				}
			}
			if it.end {
				c.finish(bw)
				return
			}
			if _, err := bw.Write(it.data); err != nil {
				c.shutdown()
				return
			}
		}
		if bw.Flush() != nil {
			c.shutdown()
			return
		}
		c.out.recycle(items)
	}
}

// finish delivers what is buffered, then half-closes the client
// connection and closes the server's.
func (c *conn) finish(bw *bufio.Writer) {
	if bw.Flush() != nil {
		c.shutdown()
		return
	}
	c.mu.Lock()
	server := c.server
	c.mu.Unlock()
	if server != nil {
		_ = server.Close()
	}
	if c.client.CloseWrite() != nil {
		c.shutdown()
	}
}

// outItem is a frame to write to the client, or the end of the
// connection.
type outItem struct {
	data []byte
	due  time.Time // zero: at once
	end  bool
}

// outQueue carries frames from fromServer and admit to writer, in order.
// Pushing never blocks, so it may happen under conn.mu, which is what
// keeps a rejected command's error in its place.
type outQueue struct {
	mu    sync.Mutex
	items []outItem
	spare []outItem
	bytes int
	ready chan struct{} // signalled when items were added
	room  chan struct{} // signalled when the writer took items
}

// push appends it.
func (q *outQueue) push(it outItem) {
	q.mu.Lock()
	q.items = append(q.items, it)
	q.bytes += len(it.data)
	q.mu.Unlock()
	signal(q.ready)
}

// take returns every queued item, waiting for one if there is none; false
// if done was closed first.
func (q *outQueue) take(done <-chan struct{}) ([]outItem, bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			items := q.items
			q.items, q.spare = q.spare, nil
			q.bytes = 0
			q.mu.Unlock()
			signal(q.room)
			return items, true
		}
		q.mu.Unlock()
		select {
		case <-q.ready:
		case <-done:
			return nil, false
		}
	}
}

// recycle hands back a slice that take returned.
func (q *outQueue) recycle(items []outItem) {
	clear(items)
	q.mu.Lock()
	q.spare = items[:0]
	q.mu.Unlock()
}

// waitRoom waits while more than maxQueued bytes are queued, or until
// done is closed.
func (q *outQueue) waitRoom(done <-chan struct{}) {
	for {
		q.mu.Lock()
		full := q.bytes > maxQueued
		q.mu.Unlock()
		if !full {
			return
		}
		select {
		case <-q.room:
		case <-done:
			return
		}
	}
}

// signal wakes whoever waits on ch without blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
