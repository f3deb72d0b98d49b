package multilock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/multilock"
	"github.com/interlock-go/interlock/rlock"
)

// A member the owner already holds gets the lease too, as in Redisson: the
// gathering's twice-the-wait lease must not cut the key's TTL, and the
// outer watchdog hold goes on once the multi-lock is released.
func TestAReenteredMemberGetsTheLease(t *testing.T) {
	ctx := interlock.WithOwner(redistest.Context(t), 5)
	c, rc := newClient(t)
	n := names(t, 2)
	a, b := rlock.New(c, n[0]), rlock.New(c, n[1])
	require.NoError(t, b.Lock(ctx)) // an outer watchdog hold
	m := multilock.New(a, b)
	require.True(t, redistest.Must[bool](t)(m.TryLock(ctx, time.Second, 10*time.Second)))
	assert.Greater(t, redistest.PTTL(t, rc, n[1]), int64(8000), "b's TTL after the gathering")
	time.Sleep(2500 * time.Millisecond)
	assert.True(t, redistest.Must[bool](t)(b.IsHeld(ctx)), "b still held after 2.5s")
	assert.True(t, redistest.Must[bool](t)(m.IsHeld(ctx)))
	require.NoError(t, m.Unlock(ctx))
	assert.EqualValues(t, -2, redistest.PTTL(t, rc, n[0]))
	assert.EqualValues(t, 1, redistest.Must[int](t)(b.HoldCount(ctx)), "the outer hold stays")
	assert.Equal(t, 1, c.Stats().Holds)
	require.NoError(t, b.Unlock(ctx))
}
