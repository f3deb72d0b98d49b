package multilock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/multilock"
	"github.com/interlock-go/interlock/rlock"
	"github.com/interlock-go/interlock/rwlock"
)

// Extend gives every member the new lease; with one member gone, it fails
// with ErrNotHeld naming it: found gone by its server, the others keep the
// new lease; known gone, nothing is sent.
func TestExtendEveryMember(t *testing.T) {
	ctx := redistest.Context(t)
	h := &redistest.Hooked{Client: redistest.NewClient(t, addr)}
	c := wrap(t, h)
	rc := redistest.NewClient(t, addr)
	n := names(t, 3)
	lost := fairlock.New(c, n[1])
	m := multilock.New(rlock.New(c, n[0]), lost, rwlock.New(c, n[2]).Read())

	assert.ErrorIs(t, m.Extend(ctx, 0), interlock.ErrInvalid)
	assert.ErrorIs(t, m.Extend(ctx, time.Second), interlock.ErrNotHeld)
	assert.Zero(t, h.Sent(), "sent for bad input, or for nothing held")

	require.NoError(t, m.LockLease(ctx, time.Second))
	g := m.Guard(ctx)
	sent := time.Now()
	require.NoError(t, m.Extend(ctx, 10*time.Second))
	for _, k := range n {
		assert.InDelta(t, 10000, redistest.PTTL(t, rc, k), float64(time.Since(sent).Milliseconds()+1), k)
	}
	assert.Greater(t, m.Remaining(ctx), 9*time.Second)

	// Deleted behind its Client's back: found gone by the Extend.
	require.NoError(t, rc.Do(ctx, rc.B().Del().Key(n[1]).Build()).Error())
	err := m.Extend(ctx, 20*time.Second)
	assert.ErrorIs(t, err, interlock.ErrNotHeld)
	var e *interlock.Error
	if assert.ErrorAs(t, err, &e) {
		assert.Equal(t, interlock.KindFairLock, e.Kind, "the member's own error")
		assert.Equal(t, n[1], e.Name)
	}
	for _, k := range []string{n[0], n[2]} {
		assert.Greater(t, redistest.PTTL(t, rc, k), int64(15000), "%s keeps the new lease", k)
	}
	require.Error(t, g.Err())
	assert.ErrorIs(t, context.Cause(g), interlock.ErrLockLost)

	// Known gone now: nothing is sent.
	before := h.Sent()
	assert.ErrorIs(t, m.Extend(ctx, time.Second), interlock.ErrNotHeld)
	assert.Equal(t, before, h.Sent(), "sent with a member known gone")
	assert.ErrorIs(t, m.Unlock(ctx), interlock.ErrNotHeld)
	for _, k := range n {
		assert.EqualValues(t, -2, redistest.PTTL(t, rc, k), "%s released", k)
	}
}

// A RedLock's Extend succeeds while a majority of members is extended.
func TestExtendRedLockNeedsAMajority(t *testing.T) {
	ctx := redistest.Context(t)
	name := names(t, 1)[0]
	m, _ := redLock(t, name)
	members := m.Members()
	require.NoError(t, m.LockLease(ctx, time.Second))
	_, err := members[0].ForceUnlock(ctx)
	require.NoError(t, err)
	require.NoError(t, m.Extend(ctx, 10*time.Second), "two of three still held")
	assert.Greater(t, m.Remaining(ctx), 9*time.Second)
	_, err = members[1].ForceUnlock(ctx)
	require.NoError(t, err)
	assert.ErrorIs(t, m.Extend(ctx, 10*time.Second), interlock.ErrNotHeld)
	assert.NoError(t, m.Unlock(ctx), "the one left is released")
}
