package compat_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/interlock-go/interlock/internal/redisproc"
)

// The golden tests watch Redis through plain RESP2 connections of their own:
// a control connection per node for state reads and step markers, a MONITOR
// connection, and pub/sub taps. They never go through rueidis, so what they
// see is exactly what the server did, and the connection that carries a tap
// is the one the test chose (the node that owns the lock's slot).

// ioTimeout bounds every synchronous read or write on a test connection.
const ioTimeout = 10 * time.Second

// redisproc.ReplyError is an error reply ("-ERR ...").
// conn is a request/response connection to one node.
type conn struct {
	t    testing.TB
	addr string
	nc   net.Conn
	r    *bufio.Reader
}

// dial connects to addr; t.Cleanup closes the connection.
func dial(t testing.TB, addr string) *conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { nc.Close() })
	return &conn{t: t, addr: addr, nc: nc, r: bufio.NewReader(nc)}
}

// try sends one command and returns its reply.
func (c *conn) try(args ...string) (any, error) {
	if err := c.nc.SetDeadline(time.Now().Add(ioTimeout)); err != nil {
		return nil, err
	}
	if _, err := c.nc.Write(redisproc.EncodeCommand(args)); err != nil {
		return nil, err
	}
	return redisproc.ReadReply(c.r)
}

// do sends one command and fails the test on any error, including an
// error reply.
func (c *conn) do(args ...string) any {
	c.t.Helper()
	v, err := c.try(args...)
	if err != nil {
		c.t.Fatalf("%s %s: %v", c.addr, strings.Join(args, " "), err)
	}
	return v
}

// pipeline sends cmds at once and returns their replies, failing the test
// on any error, an error reply included. The server runs a client's
// pipelined commands back to back, with no other client's in between.
func (c *conn) pipeline(cmds ...[]string) []any {
	c.t.Helper()
	if err := c.nc.SetDeadline(time.Now().Add(ioTimeout)); err != nil {
		c.t.Fatalf("%s: %v", c.addr, err)
	}
	var buf []byte
	for _, args := range cmds {
		buf = append(buf, redisproc.EncodeCommand(args)...)
	}
	if _, err := c.nc.Write(buf); err != nil {
		c.t.Fatalf("%s: pipeline: %v", c.addr, err)
	}
	out := make([]any, len(cmds))
	for i, args := range cmds {
		v, err := redisproc.ReadReply(c.r)
		if err != nil {
			c.t.Fatalf("%s %s: %v", c.addr, strings.Join(args, " "), err)
		}
		out[i] = v
	}
	return out
}

// str runs a command whose reply is a string or nil ("" for nil).
func (c *conn) str(args ...string) string {
	c.t.Helper()
	switch v := c.do(args...).(type) {
	case string:
		return v
	case nil:
		return ""
	default:
		c.t.Fatalf("%s: reply %#v is not a string", strings.Join(args, " "), v)
		return ""
	}
}

// int runs a command whose reply is an integer.
func (c *conn) int(args ...string) int64 {
	c.t.Helper()
	v, ok := c.do(args...).(int64)
	if !ok {
		c.t.Fatalf("%s: reply is not an integer", strings.Join(args, " "))
	}
	return v
}

// strs runs a command whose reply is an array of strings.
func (c *conn) strs(args ...string) []string {
	c.t.Helper()
	return toStrings(c.t, c.do(args...))
}

// hash returns HGETALL key as a map (empty when the key does not exist).
func (c *conn) hash(key string) map[string]string {
	c.t.Helper()
	flat := c.strs("HGETALL", key)
	m := make(map[string]string, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		m[flat[i]] = flat[i+1]
	}
	return m
}

// scan returns every key of this node that matches pattern.
func (c *conn) scan(pattern string) []string {
	c.t.Helper()
	var found []string
	cursor := "0"
	for {
		reply, ok := c.do("SCAN", cursor, "MATCH", pattern, "COUNT", "1000").([]any)
		if !ok || len(reply) != 2 {
			c.t.Fatalf("SCAN: unexpected reply %#v", reply)
		}
		cursor, _ = reply[0].(string)
		found = append(found, toStrings(c.t, reply[1])...)
		if cursor == "0" {
			return found
		}
	}
}

func toStrings(t testing.TB, v any) []string {
	t.Helper()
	arr, ok := v.([]any)
	if !ok && v != nil {
		t.Fatalf("reply %#v is not an array", v)
	}
	out := make([]string, len(arr))
	for i, e := range arr {
		s, ok := e.(string)
		if !ok {
			t.Fatalf("array element %#v is not a string", e)
		}
		out[i] = s
	}
	return out
}

// stream is a connection in a push mode (MONITOR, (P|S)SUBSCRIBE): one
// goroutine reads every value the server sends and queues it.
type stream struct {
	nc   net.Conn
	done chan struct{}

	mu     sync.Mutex
	queue  []any
	err    error
	notify chan struct{} // buffered 1: something was queued or err set
}

// openStream connects to addr, sends cmd and reads the acks confirmations
// that it produces (one per channel for the subscribe commands, +OK for
// MONITOR) before it returns, so that whatever happens on the server after
// openStream returns reaches the stream. t.Cleanup closes the connection
// and waits for the reader goroutine.
func openStream(t testing.TB, addr string, acks int, cmd ...string) *stream {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	r := bufio.NewReader(nc)
	fail := func(err error) {
		nc.Close()
		t.Fatalf("%s %s: %v", addr, strings.Join(cmd, " "), err)
	}
	if err := nc.SetDeadline(time.Now().Add(ioTimeout)); err != nil {
		fail(err)
	}
	if _, err := nc.Write(redisproc.EncodeCommand(cmd)); err != nil {
		fail(err)
	}
	for range acks {
		if _, err := redisproc.ReadReply(r); err != nil {
			fail(err)
		}
	}
	if err := nc.SetDeadline(time.Time{}); err != nil {
		fail(err)
	}
	s := &stream{nc: nc, done: make(chan struct{}), notify: make(chan struct{}, 1)}
	go s.read(r)
	t.Cleanup(s.close)
	return s
}

func (s *stream) read(r *bufio.Reader) {
	defer close(s.done)
	for {
		v, err := redisproc.ReadReply(r)
		var re redisproc.ReplyError
		if errors.As(err, &re) {
			v, err = re, nil
		}
		s.mu.Lock()
		if err != nil {
			s.err = err
		} else {
			s.queue = append(s.queue, v)
		}
		s.mu.Unlock()
		select {
		case s.notify <- struct{}{}:
		default:
		}
		if err != nil {
			return
		}
	}
}

func (s *stream) close() {
	s.nc.Close()
	<-s.done
}

// until consumes queued values up to and including the first one for which
// stop returns true, and returns the values before it. It fails when none
// arrives within timeout.
func (s *stream) until(t testing.TB, timeout time.Duration, stop func(any) bool) []any {
	t.Helper()
	var before []any
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		for len(s.queue) > 0 {
			v := s.queue[0]
			s.queue = s.queue[1:]
			if stop(v) {
				s.mu.Unlock()
				return before
			}
			before = append(before, v)
		}
		err := s.err
		s.mu.Unlock()
		if err != nil {
			t.Fatalf("stream closed while waiting: %v (got %v)", err, before)
		}
		select {
		case <-s.notify:
		case <-deadline.C:
			t.Fatalf("no marker within %v; got %v", timeout, before)
		}
	}
}

// pubMsg is one message delivered to a subscriber.
type pubMsg struct {
	Kind    string // "message", "pmessage" or "smessage"
	Channel string
	Payload string
}

func (m pubMsg) String() string { return fmt.Sprintf("%s %s %q", m.Kind, m.Channel, m.Payload) }

// asPubMsg decodes a pushed pub/sub value; ok is false for anything else
// (for example a subscription confirmation).
func asPubMsg(v any) (pubMsg, bool) {
	arr, _ := v.([]any)
	str := func(i int) string { s, _ := arr[i].(string); return s }
	switch {
	case len(arr) == 3 && (str(0) == "message" || str(0) == "smessage"):
		return pubMsg{str(0), str(1), str(2)}, true
	case len(arr) == 4 && str(0) == "pmessage":
		return pubMsg{str(0), str(2), str(3)}, true
	}
	return pubMsg{}, false
}

// monLine is one MONITOR line: the client that sent the command ("lua" for
// commands run by a script, else host:port) and the command's arguments.
type monLine struct {
	Client string
	Args   []string
}

func (l monLine) String() string { return "[" + l.Client + "] " + strings.Join(l.Args, " ") }

// parseMonitor parses a MONITOR line such as
//
//	1795998984.145797 [0 lua] "exists" "myLock"
//
// Arguments are quoted the way sdscatrepr quotes them.
func parseMonitor(s string) (monLine, error) {
	client, rest, err := monitorPrefix(s)
	if err != nil {
		return monLine{}, err
	}
	l := monLine{Client: client}
	for rest != "" {
		if rest[0] != '"' {
			return monLine{}, fmt.Errorf("monitor line %q: expected a quoted argument at %q", s, rest)
		}
		arg, n, err := unquoteRepr(rest)
		if err != nil {
			return monLine{}, fmt.Errorf("monitor line %q: %w", s, err)
		}
		l.Args = append(l.Args, arg)
		rest = strings.TrimPrefix(rest[n:], " ")
	}
	return l, nil
}

// unquoteRepr decodes the sdscatrepr-quoted string at the start of s and
// returns it with the number of bytes it took.
func unquoteRepr(s string) (string, int, error) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			return b.String(), i + 1, nil
		case c != '\\':
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			break
		}
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'x':
			if i+2 >= len(s) {
				return "", 0, redisproc.ErrProtocol
			}
			v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
			if err != nil {
				return "", 0, err
			}
			b.WriteByte(byte(v))
			i += 2
		default: // \\ and \"
			b.WriteByte(s[i])
		}
	}
	return "", 0, fmt.Errorf("unterminated quoted string %q", s)
}

// cmdCounter counts, from a MONITOR connection to one node, the commands
// that mention a string (a lock's name, say), by command name in lower
// case; the commands that scripts run count too. It keeps counts, not
// lines, since a shared server shows every other test's commands as well,
// and counting only what mentions the string leaves theirs out.
type cmdCounter struct {
	substr string
	nc     net.Conn
	done   chan struct{}
	seq    int

	mu     sync.Mutex
	counts map[string]int64
	seen   map[string]bool // markers seen, by name
	err    error
	notify chan struct{} // buffered 1: a marker was seen or err set
}

// countCommands opens a MONITOR connection to addr that counts the
// commands mentioning substr; t.Cleanup closes it.
func countCommands(t testing.TB, addr, substr string) *cmdCounter {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	r := bufio.NewReader(nc)
	if err := nc.SetDeadline(time.Now().Add(ioTimeout)); err == nil {
		if _, err = nc.Write(redisproc.EncodeCommand([]string{"MONITOR"})); err == nil {
			_, err = redisproc.ReadReply(r)
		}
	}
	if err == nil {
		err = nc.SetDeadline(time.Time{})
	}
	if err != nil {
		nc.Close()
		t.Fatalf("%s MONITOR: %v", addr, err)
	}
	c := &cmdCounter{substr: substr, nc: nc, done: make(chan struct{}), counts: map[string]int64{},
		seen: map[string]bool{}, notify: make(chan struct{}, 1)}
	go c.read(r)
	t.Cleanup(func() {
		nc.Close()
		<-c.done
	})
	return c
}

func (c *cmdCounter) read(r *bufio.Reader) {
	defer close(c.done)
	// MONITOR pushes one status reply per command, "+<line>\r\n"; the
	// lines are read as bytes and only those that mention substr are
	// looked at, which keeps up with a busy server.
	substr := []byte(c.substr)
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			for errors.Is(err, bufio.ErrBufferFull) { // a long line (a script's source): skip it
				_, err = r.ReadSlice('\n')
			}
			continue
		}
		if err == nil && (len(line) == 0 || line[0] != '+') {
			err = fmt.Errorf("unexpected MONITOR push %q", line)
		}
		if err == nil && !bytes.Contains(line, substr) {
			continue
		}
		c.mu.Lock()
		if err != nil {
			c.err = err
		} else if _, rest, ok := strings.Cut(string(line), `] "`); ok {
			// `+<time> [<db> <client>] "<command>" "<arg>" ...`
			name, args, _ := strings.Cut(rest, `"`)
			name = strings.ToLower(name)
			c.counts[name]++
			if name == "echo" {
				c.seen[strings.Trim(strings.TrimSpace(args), `"`)] = true
				select {
				case c.notify <- struct{}{}:
				default:
				}
			}
		}
		c.mu.Unlock()
		if err != nil {
			select {
			case c.notify <- struct{}{}:
			default:
			}
			return
		}
	}
}

// snapshot returns the counts so far, once every command that ctl's node
// ran before the call has been counted (an ECHO marker sent with ctl,
// which must be a connection to the same node, bounds them).
func (c *cmdCounter) snapshot(t testing.TB, ctl *conn) map[string]int64 {
	t.Helper()
	c.seq++
	mark := c.substr + ":count-mark:" + strconv.Itoa(c.seq)
	ctl.do("ECHO", mark)
	deadline := time.NewTimer(markerTimeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		seen, err := c.seen[mark], c.err
		counts := make(map[string]int64, len(c.counts))
		for k, v := range c.counts {
			counts[k] = v
		}
		c.mu.Unlock()
		if seen {
			return counts
		}
		if err != nil {
			t.Fatalf("MONITOR %s closed: %v", ctl.addr, err)
		}
		select {
		case <-c.notify:
		case <-deadline.C:
			t.Fatalf("MONITOR %s: marker %s not seen within %v", ctl.addr, mark, markerTimeout)
		}
	}
}
