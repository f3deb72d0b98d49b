package runtime

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/interlock-go/interlock/internal/report"
	"github.com/interlock-go/interlock/internal/script"
)

// clockRecheck is how long a skew measurement is trusted.
const clockRecheck = time.Minute

// wallClock is the Runtime's wall clock and what it last learnt about the
// skew.
type wallClock struct {
	limit time.Duration // 0: no check

	mu       sync.Mutex
	now      func() time.Time // nil: time.Now
	measured time.Time        // monotonic; zero: never
	skew     time.Duration
}

// SetWallClock replaces the wall clock, read only where the wire format
// needs wall-clock time (the fair lock's queue deadlines); nil restores
// time.Now. Tests use it to skew one client's clock.
func (r *Runtime) SetWallClock(now func() time.Time) {
	r.clock.mu.Lock()
	defer r.clock.mu.Unlock()
	r.clock.now, r.clock.measured = now, time.Time{}
}

// WallNow returns the time by the wall clock.
func (r *Runtime) WallNow() time.Time {
	r.clock.mu.Lock()
	now := r.clock.now
	r.clock.mu.Unlock()
	if now != nil {
		return now()
	}
	return time.Now()
}

// ClockSkew measures how far the server's TIME is ahead of the wall clock,
// taking the middle of the round trip as the moment TIME was read.
func (r *Runtime) ClockSkew(ctx context.Context) (time.Duration, error) {
	sent := time.Now()
	local := r.WallNow()
	parts, err := r.RC.Do(ctx, script.Resendable(r.RC.B().Time().Build())).AsStrSlice()
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

// CheckClockSkew is the skew guard: nil when it is off or the last
// measurement (at most a minute old, else taken now) is within the limit,
// else an error wrapping report.ErrClockSkew. A failed measurement's error
// is returned as it is.
func (r *Runtime) CheckClockSkew(ctx context.Context) error {
	w := &r.clock
	if w.limit <= 0 {
		return nil
	}
	w.mu.Lock()
	fresh := !w.measured.IsZero() && time.Since(w.measured) < clockRecheck
	skew := w.skew
	w.mu.Unlock()
	if !fresh {
		var err error
		if skew, err = r.ClockSkew(ctx); err != nil {
			return err
		}
		w.mu.Lock()
		w.measured, w.skew = time.Now(), skew
		w.mu.Unlock()
	}
	if skew > w.limit || skew < -w.limit {
		return fmt.Errorf("%w: server time minus client time is %v, beyond the limit of ±%v",
			report.ErrClockSkew, skew.Round(time.Millisecond), w.limit)
	}
	return nil
}
