package redisproc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// ProbeTimeout bounds one dial plus its commands.
const ProbeTimeout = 2 * time.Second

// ReplyError is an error reply such as "ERR unknown command".
type ReplyError string

// Error returns the reply's text.
func (e ReplyError) Error() string { return string(e) }

// ErrProtocol is returned for a reply that is not valid RESP2.
var ErrProtocol = errors.New("redisproc: malformed RESP reply")

// Conn is one connection with a deadline.
type Conn struct {
	conn net.Conn
	r    *bufio.Reader
}

// Dial connects to addr. The connection expires after ProbeTimeout or at
// ctx's deadline, whichever comes first.
func Dial(ctx context.Context, addr string) (*Conn, error) {
	deadline := time.Now().Add(ProbeTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	d := net.Dialer{Deadline: deadline}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if err := conn.SetDeadline(deadline); err != nil {
		conn.Close()
		return nil, err
	}
	return &Conn{conn: conn, r: bufio.NewReader(conn)}, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.conn.Close() }

// Do sends one command and reads its reply: a string (simple or bulk), an
// int64, a []any, or nil. An error reply is returned as a ReplyError.
func (c *Conn) Do(args ...string) (any, error) {
	if _, err := c.conn.Write(EncodeCommand(args)); err != nil {
		return nil, err
	}
	return ReadReply(c.r)
}

// DoString is Do for commands whose reply is a string.
func (c *Conn) DoString(args ...string) (string, error) {
	v, err := c.Do(args...)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s: unexpected reply %v", strings.Join(args, " "), v)
	}
	return s, nil
}

// EncodeCommand renders args as a RESP2 array of bulk strings, the form of
// a command on the wire.
func EncodeCommand(args []string) []byte {
	b := fmt.Appendf(nil, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b
}

// Command dials addr, runs one command and hangs up.
func Command(ctx context.Context, addr string, args ...string) (any, error) {
	c, err := Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.Do(args...)
}

// CommandString is Command for commands whose reply is a string.
func CommandString(ctx context.Context, addr string, args ...string) (string, error) {
	c, err := Dial(ctx, addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	return c.DoString(args...)
}

// ReadReply reads one RESP2 reply. Error replies nested in an array are
// kept as ReplyError values.
func ReadReply(r *bufio.Reader) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, ErrProtocol
	}
	kind, body := line[0], line[1:len(line)-2]
	switch kind {
	case '+':
		return body, nil
	case '-':
		return nil, ReplyError(body)
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, ErrProtocol
		}
		if n < 0 {
			return nil, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, ErrProtocol
		}
		if n < 0 {
			return nil, nil
		}
		arr := make([]any, n)
		for i := range arr {
			v, err := ReadReply(r)
			var re ReplyError
			if errors.As(err, &re) {
				v, err = re, nil
			}
			if err != nil {
				return nil, err
			}
			arr[i] = v
		}
		return arr, nil
	default:
		return nil, ErrProtocol
	}
}

// InfoField returns the value of field in the text of an INFO or CLUSTER
// INFO reply, and whether it was there.
func InfoField(info, field string) (string, bool) {
	for line := range strings.Lines(info) {
		k, v, ok := strings.Cut(strings.TrimRight(line, "\r\n"), ":")
		if ok && k == field {
			return v, true
		}
	}
	return "", false
}
