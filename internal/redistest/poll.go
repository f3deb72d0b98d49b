package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/interlock-go/interlock/internal/redisproc"
)

// waitUntil calls check every interval until it returns nil or ctx ends. On
// the end of ctx it returns an error wrapping ctx.Err() that says what was
// awaited and what the last check found.
func waitUntil(ctx context.Context, interval time.Duration, what string, check func(context.Context) error) error {
	t := time.NewTimer(0)
	defer t.Stop()
	var last error // the latest check's verdict, which says what was missing
	for {
		select {
		case <-ctx.Done():
			if last == nil {
				return fmt.Errorf("%s: %w", what, ctx.Err())
			}
			return fmt.Errorf("%s: %w (last check: %v)", what, ctx.Err(), last)
		case <-t.C:
		}
		if last = check(ctx); last == nil {
			return nil
		}
		t.Reset(interval)
	}
}

// logTails returns the last log lines of each server started by this
// package, formatted to be appended to an error message.
func logTails(servers ...*Server) string {
	var b strings.Builder
	for _, s := range servers {
		if s != nil && s.proc != nil {
			b.WriteString(s.proc.Log())
		}
		if s != nil && s.ctr != nil {
			b.WriteString(s.ctr.logTail())
		}
	}
	return b.String()
}

// nodeConnTimeout bounds one command or pipeline of a nodeConn. A pipeline
// of hundreds of MIGRATEs takes seconds on a loaded machine.
const nodeConnTimeout = 10 * time.Second

// nodeConn is one long-lived connection to a server, for operations that
// send many commands (Reshard). Unlike redisproc.Conn its deadline is set per
// command, from the command's context.
type nodeConn struct {
	addr string
	conn net.Conn
	r    *bufio.Reader
}

// dialNode connects to addr.
func dialNode(ctx context.Context, addr string) (*nodeConn, error) {
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, redisproc.ProbeTimeout)
	defer cancel()
	conn, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return &nodeConn{addr: addr, conn: conn, r: bufio.NewReader(conn)}, nil
}

// do sends one command and reads its reply (see redisproc.ReadReply). It
// gives up at ctx's deadline or after nodeConnTimeout, whichever comes
// first; the connection is unusable after a timeout.
func (c *nodeConn) do(ctx context.Context, args ...string) (any, error) {
	deadline := time.Now().Add(nodeConnTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := c.conn.SetDeadline(deadline); err != nil {
		return nil, err
	}
	if _, err := c.conn.Write(redisproc.EncodeCommand(args)); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", c.addr, args[0], err)
	}
	v, err := redisproc.ReadReply(c.r)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", c.addr, strings.Join(args[:min(len(args), 4)], " "), err)
	}
	return v, nil
}

// close closes the connection.
func (c *nodeConn) close() { _ = c.conn.Close() }

// pipeline sends cmds at once and reads their replies, in order. Error
// replies are returned as redisproc.ReplyError values among the replies;
// the error is for the connection. Like do, it gives up at ctx's deadline
// or after nodeConnTimeout.
func (c *nodeConn) pipeline(ctx context.Context, cmds [][]string) ([]any, error) {
	if len(cmds) == 0 {
		return nil, nil
	}
	deadline := time.Now().Add(nodeConnTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := c.conn.SetDeadline(deadline); err != nil {
		return nil, err
	}
	var buf []byte
	for _, args := range cmds {
		buf = append(buf, redisproc.EncodeCommand(args)...)
	}
	if _, err := c.conn.Write(buf); err != nil {
		return nil, fmt.Errorf("%s: %w", c.addr, err)
	}
	replies := make([]any, len(cmds))
	for i := range replies {
		v, err := redisproc.ReadReply(c.r)
		var re redisproc.ReplyError
		if errors.As(err, &re) {
			v, err = fmt.Errorf("%s: %s: %w", c.addr, strings.Join(cmds[i][:min(len(cmds[i]), 4)], " "), re), nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.addr, err)
		}
		replies[i] = v
	}
	return replies, nil
}
