package redistest

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

// The harness talks to the servers it starts through this minimal RESP2
// client rather than through rueidis: it dials once per check, has a hard
// deadline (a paused server must not hang a readiness poll), and leaves no
// goroutine behind.

// probeTimeout bounds one dial plus its commands.
const probeTimeout = 2 * time.Second

// respError is an error reply such as "ERR unknown command".
type respError string

func (e respError) Error() string { return string(e) }

// respConn is one connection with a deadline.
type respConn struct {
	conn net.Conn
	r    *bufio.Reader
}

// dialResp connects to addr. The connection expires after probeTimeout or at
// ctx's deadline, whichever comes first.
func dialResp(ctx context.Context, addr string) (*respConn, error) {
	deadline := time.Now().Add(probeTimeout)
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
	return &respConn{conn: conn, r: bufio.NewReader(conn)}, nil
}

// Close closes the connection.
func (c *respConn) Close() error { return c.conn.Close() }

// do sends one command and reads its reply: a string (simple or bulk), an
// int64, a []any, or nil. An error reply is returned as a respError.
func (c *respConn) do(args ...string) (any, error) {
	b := fmt.Appendf(nil, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.conn.Write(b); err != nil {
		return nil, err
	}
	return readReply(c.r)
}

// doString is do for commands whose reply is a string.
func (c *respConn) doString(args ...string) (string, error) {
	v, err := c.do(args...)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s: unexpected reply %v", strings.Join(args, " "), v)
	}
	return s, nil
}

// command dials addr, runs one command and hangs up.
func command(ctx context.Context, addr string, args ...string) (any, error) {
	c, err := dialResp(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.do(args...)
}

// commandString is command for commands whose reply is a string.
func commandString(ctx context.Context, addr string, args ...string) (string, error) {
	c, err := dialResp(ctx, addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	return c.doString(args...)
}

var errProtocol = errors.New("redistest: malformed RESP reply")

// readReply reads one RESP2 reply. Error replies nested in an array are kept
// as respError values.
func readReply(r *bufio.Reader) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, errProtocol
	}
	kind, body := line[0], line[1:len(line)-2]
	switch kind {
	case '+':
		return body, nil
	case '-':
		return nil, respError(body)
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, errProtocol
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
			return nil, errProtocol
		}
		if n < 0 {
			return nil, nil
		}
		arr := make([]any, n)
		for i := range arr {
			v, err := readReply(r)
			var re respError
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
		return nil, errProtocol
	}
}

// infoField returns the value of field in the text of an INFO or CLUSTER INFO
// reply, and whether it was there.
func infoField(info, field string) (string, bool) {
	for line := range strings.Lines(info) {
		k, v, ok := strings.Cut(strings.TrimRight(line, "\r\n"), ":")
		if ok && k == field {
			return v, true
		}
	}
	return "", false
}
