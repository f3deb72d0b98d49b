package conformance_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
)

// badInput: a bad name, a bad duration, a bad owner or a nil client give
// errors wrapping ErrInvalid, and nothing is sent.
func (s *suite) badInput(t *testing.T) {
	h := &redistest.Hooked{Client: redistest.NewClient(t, s.Addr)}
	c := client(t, h)
	ctx := testCtx(t)

	// every checks that each method of l fails with ErrInvalid.
	every := func(l interlock.Locker, what string) {
		t.Helper()
		assert.ErrorIs(t, l.Lock(ctx), interlock.ErrInvalid, what)
		assert.ErrorIs(t, l.LockLease(ctx, time.Second), interlock.ErrInvalid, what)
		_, err := l.TryLock(ctx, 0, 0)
		assert.ErrorIs(t, err, interlock.ErrInvalid, what)
		_, err = l.TryLock(ctx, time.Second, 0)
		assert.ErrorIs(t, err, interlock.ErrInvalid, what)
		assert.ErrorIs(t, l.Unlock(ctx), interlock.ErrInvalid, what)
		assert.ErrorIs(t, l.Extend(ctx, time.Second), interlock.ErrInvalid, what)
		_, err = l.ForceUnlock(ctx)
		assert.ErrorIs(t, err, interlock.ErrInvalid, what)
		_, err = l.IsLocked(ctx)
		assert.ErrorIs(t, err, interlock.ErrInvalid, what)
		_, err = l.IsHeld(ctx)
		assert.ErrorIs(t, err, interlock.ErrInvalid, what)
		_, err = l.HoldCount(ctx)
		assert.ErrorIs(t, err, interlock.ErrInvalid, what)
		_, err = l.TTL(ctx)
		assert.ErrorIs(t, err, interlock.ErrInvalid, what)
		assert.ErrorIs(t, context.Cause(l.Guard(ctx)), interlock.ErrInvalid, what)
		assert.Zero(t, l.Remaining(ctx), what)
	}
	for _, name := range []string{"", "a{b", "{}x", "x}y"} {
		every(s.New(c, name), "name "+name)
	}
	every(s.New(nil, "x"), "nil client")

	m := s.New(c, "fine")
	bad := [][2]time.Duration{{-time.Second, 0}, {0, -time.Second}, {0, time.Microsecond}}
	if s.Fair {
		bad = append(bad, [2]time.Duration{time.Microsecond, 0})
	}
	for _, d := range bad {
		_, err := m.TryLock(ctx, d[0], d[1])
		assert.ErrorIs(t, err, interlock.ErrInvalid, "TryLock(%v, %v)", d[0], d[1])
	}
	assert.ErrorIs(t, m.LockLease(ctx, 0), interlock.ErrInvalid)
	assert.ErrorIs(t, m.LockLease(ctx, -time.Second), interlock.ErrInvalid)
	assert.ErrorIs(t, m.LockLease(ctx, time.Microsecond), interlock.ErrInvalid)
	assert.ErrorIs(t, m.Lock(interlock.WithOwner(ctx, -3)), interlock.ErrInvalid)
	for _, lease := range []time.Duration{0, -time.Second, time.Microsecond} {
		assert.ErrorIs(t, m.Extend(ctx, lease), interlock.ErrInvalid, "Extend(%v)", lease)
	}
	assert.ErrorIs(t, m.Extend(interlock.WithOwner(ctx, -3), time.Second), interlock.ErrInvalid)
	assert.Zero(t, h.Sent(), "commands sent for bad input")
	// An owner this Client holds nothing for is told so without a word sent.
	assert.ErrorIs(t, m.Extend(ctx, time.Second), interlock.ErrNotHeld)
	assert.Zero(t, h.Sent(), "commands sent for an Extend of nothing held")

	_, err := interlock.New(nil)
	assert.ErrorIs(t, err, interlock.ErrInvalid)
	_, err = interlock.New(h, interlock.WithWatchdogTimeout(time.Millisecond))
	assert.ErrorIs(t, err, interlock.ErrInvalid)
	_, err = interlock.New(h, interlock.WithRenewalBatchSize(0))
	assert.ErrorIs(t, err, interlock.ErrInvalid)
	assert.Zero(t, h.Sent(), "commands sent for bad options")
}
