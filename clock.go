package interlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// ErrClockSkew is wrapped by the error of a fair-lock wait that the skew
// check refused (WithClockSkewLimit).
var ErrClockSkew = errors.New("interlock: wall clock too far from the Redis server's")

// clockRecheck is how long a skew measurement is trusted.
const clockRecheck = time.Minute

// wallClock is the Client's wall clock and what it last learnt about the
// skew. One is made per Client (configs share it by pointer).
type wallClock struct {
	now   func() time.Time // nil: time.Now
	limit time.Duration    // 0: no check

	mu       sync.Mutex
	measured time.Time // monotonic; zero: never
	skew     time.Duration
}

// wall returns the wall clock state of c, made on first use.
func (c *config) wall() *wallClock {
	if c.clock == nil {
		c.clock = &wallClock{}
	}
	return c.clock
}

// WithWallClock sets the wall clock the Client reads where the wire format
// needs wall-clock time: the fair lock's queue deadlines, which are epoch
// milliseconds that every client of the lock (Go or Java) compares with its
// own clock. Nothing else reads it: waits, leases, renewal, MaxHold and
// Remaining use the monotonic clock. The default, and what nil restores,
// is time.Now. Tests use it to skew one client's clock.
func WithWallClock(now func() time.Time) Option {
	return func(c *config) { c.wall().now = now }
}

// WithClockSkewLimit turns on the fair lock's skew guard: before a fair
// lock queues a waiter, the Client compares its wall clock with the Redis
// server's TIME (one round trip, then at most once a minute), and when they
// differ by more than limit it refuses to queue: Lock and TryLock return an
// error wrapping ErrClockSkew and the waiter is not queued. A client whose
// clock runs ahead drops live waiters from the queue early; one whose clock
// runs behind keeps dead waiters too long (see the fairlock package
// documentation). A quarter of the fair lock's wait timeout is a sensible
// limit. The default, 0, is no check, as in Redisson.
func WithClockSkewLimit(limit time.Duration) Option {
	return func(c *config) { c.wall().limit = limit }
}

// WallNow returns the time by the Client's wall clock (WithWallClock).
func (c *Client) WallNow() time.Time {
	if w := c.cfg.clock; w != nil && w.now != nil {
		return w.now()
	}
	return time.Now()
}

// ClockSkew measures how far the Redis server's clock (TIME) is ahead of
// the Client's wall clock, taking the middle of the round trip as the
// moment TIME was read: the error is at most half the round trip.
func (c *Client) ClockSkew(ctx context.Context) (time.Duration, error) {
	sent := time.Now()
	local := c.WallNow()
	parts, err := c.rc.Do(ctx, c.rc.B().Time().Build()).AsStrSlice()
	if err != nil {
		return 0, err
	}
	rtt := time.Since(sent)
	if len(parts) != 2 {
		return 0, fmt.Errorf("interlock: TIME answered %d fields, want 2", len(parts))
	}
	sec, err1 := strconv.ParseInt(parts[0], 10, 64)
	usec, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("interlock: TIME answered %q: %w", parts, err)
	}
	server := time.Unix(sec, usec*int64(time.Microsecond/time.Nanosecond))
	return server.Sub(local.Add(rtt / 2)), nil
}

// CheckClockSkew runs the skew guard of WithClockSkewLimit: nil when it is
// off or the last measurement (at most a minute old, else taken now) is
// within the limit, else an error wrapping ErrClockSkew. An error from the
// measurement itself is returned as it is. The fair lock calls it before
// it queues a waiter.
func (c *Client) CheckClockSkew(ctx context.Context) error {
	w := c.cfg.clock
	if w == nil || w.limit <= 0 {
		return nil
	}
	w.mu.Lock()
	fresh := !w.measured.IsZero() && time.Since(w.measured) < clockRecheck
	skew := w.skew
	w.mu.Unlock()
	if !fresh {
		var err error
		if skew, err = c.ClockSkew(ctx); err != nil {
			return err
		}
		w.mu.Lock()
		w.measured, w.skew = time.Now(), skew
		w.mu.Unlock()
	}
	if skew > w.limit || skew < -w.limit {
		return fmt.Errorf("%w: server time minus client time is %v, beyond the limit of ±%v",
			ErrClockSkew, skew.Round(time.Millisecond), w.limit)
	}
	return nil
}
