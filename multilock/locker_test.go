package multilock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/multilock"
	"github.com/interlock-go/interlock/rlock"
)

// A multi-lock is a Locker: it can be taken with interlock.Lock, or be a
// member of another multi-lock.
var _ interlock.Locker = multilock.New()

// TestMultiLockQueries: IsLocked, TTL, HoldCount and ForceUnlock answer
// for the lock as a whole: locked as soon as a member is (an acquisition
// would wait), the TTL until no member is, the holds every member has.
func TestMultiLockQueries(t *testing.T) {
	ctx := redistest.Context(t)
	c, rc := newClient(t)
	n := names(t, 2)
	a, b := rlock.New(c, n[0]), rlock.New(c, n[1])
	var m interlock.Locker = multilock.New(a, b)

	locked := must[bool](t)(m.IsLocked(ctx))
	assert.False(t, locked)
	assert.Zero(t, must[time.Duration](t)(m.TTL(ctx)))
	assert.Zero(t, must[int](t)(m.HoldCount(ctx)))

	// Another owner holds one member: the lock is taken, not by us.
	other := interlock.WithOwner(ctx, interlock.NewOwnerID())
	require.NoError(t, b.LockLease(other, time.Minute))
	require.NoError(t, a.LockLease(other, 10*time.Second))
	assert.True(t, must[bool](t)(m.IsLocked(ctx)))
	ttl := must[time.Duration](t)(m.TTL(ctx))
	assert.Greater(t, ttl, 50*time.Second, "the longest member's")
	assert.Zero(t, must[int](t)(m.HoldCount(ctx)))
	require.NoError(t, a.Unlock(other))
	assert.True(t, must[bool](t)(m.IsLocked(ctx)), "one member is enough")

	ok := must[bool](t)(m.ForceUnlock(ctx))
	assert.True(t, ok)
	assert.False(t, must[bool](t)(m.IsLocked(ctx)))
	assert.False(t, must[bool](t)(m.ForceUnlock(ctx)), "nothing left to delete")

	// Our holds: the fewest of any member.
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Lock(ctx))
	assert.Equal(t, 2, must[int](t)(m.HoldCount(ctx)))
	require.NoError(t, b.Unlock(ctx))
	assert.Equal(t, 1, must[int](t)(m.HoldCount(ctx)))
	_, err := rc.Do(ctx, rc.B().Persist().Key(n[0]).Build()).AsBool()
	require.NoError(t, err)
	assert.Equal(t, interlock.NoExpiry, must[time.Duration](t)(m.TTL(ctx)))
	assert.True(t, must[bool](t)(m.ForceUnlock(ctx)))
	for _, k := range n {
		assert.EqualValues(t, -2, redistest.PTTL(t, rc, k), "nothing left on %s", k)
	}

	// A hold taken on one goroutine is released on another.
	h := func() *interlock.Hold {
		out := make(chan *interlock.Hold)
		go func() {
			h, err := interlock.Lock(ctx, m)
			assert.NoError(t, err)
			out <- h
		}()
		return <-out
	}()
	require.NotNil(t, h)
	assert.Positive(t, h.Remaining())
	require.NoError(t, h.Unlock(ctx))
	assert.False(t, must[bool](t)(m.IsLocked(ctx)))
}

// TestRedLockQueries: a RedLock is taken once more than a minority of its
// members are locked, and a member that does not answer matters only when
// the answer depends on it.
func TestRedLockQueries(t *testing.T) {
	ctx := redistest.Context(t)
	n := names(t, 3)
	var members []interlock.Locker
	for _, k := range n {
		c, _ := newClient(t)
		members = append(members, rlock.New(c, k))
	}
	red := multilock.NewRedLock(members...)
	other := interlock.WithOwner(ctx, interlock.NewOwnerID())

	require.NoError(t, members[0].LockLease(other, time.Minute))
	assert.False(t, must[bool](t)(red.IsLocked(ctx)), "a minority does not keep it from being taken")
	assert.Zero(t, must[time.Duration](t)(red.TTL(ctx)))
	assert.Zero(t, must[int](t)(red.HoldCount(other)), "a RedLock's holds are a majority's")
	require.NoError(t, members[1].LockLease(other, 20*time.Second))
	assert.True(t, must[bool](t)(red.IsLocked(ctx)))
	ttl := must[time.Duration](t)(red.TTL(ctx))
	assert.Greater(t, ttl, 10*time.Second)
	assert.Less(t, ttl, 30*time.Second, "until only a minority is locked: the second longest")
	assert.Equal(t, 1, must[int](t)(red.HoldCount(other)))
	require.NoError(t, members[0].LockLease(other, time.Minute))
	require.NoError(t, members[2].LockLease(other, time.Minute))
	assert.Equal(t, 1, must[int](t)(red.HoldCount(other)), "holds 2, 1 and 1: a majority has 1")
	require.NoError(t, members[0].Unlock(other))
	require.NoError(t, members[2].Unlock(other))

	// The third member's master stops answering (its client is closed).
	rcDead := redistest.NewClient(t, addr)
	dead, err := interlock.New(rcDead)
	require.NoError(t, err)
	t.Cleanup(func() { _ = dead.Close() })
	red = multilock.NewRedLock(members[0], members[1], rlock.New(dead, n[2]))
	rcDead.Close()
	assert.True(t, must[bool](t)(red.IsLocked(ctx)), "two of three locked: the third cannot change that")
	require.NoError(t, members[1].Unlock(other))
	_, err = red.IsLocked(ctx)
	assert.Error(t, err, "one of three locked: the third decides")
	_, err = red.TTL(ctx)
	assert.Error(t, err)
	for _, l := range members {
		_, _ = l.ForceUnlock(context.Background())
	}
}

// must returns v, failing t on err.
func must[T any](t *testing.T) func(v T, err error) T {
	return func(v T, err error) T {
		t.Helper()
		require.NoError(t, err)
		return v
	}
}
