package rlock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/rlock"
)

func TestWatchdogKeepsTheLock(t *testing.T) {
	if testing.Short() {
		t.Skip("holds a lock for 5s")
	}
	c, rc := newClient(t, interlock.WithWatchdogTimeout(time.Second))
	ctx := redistest.Context(t)
	m := rlock.New(c, lockName(t))
	require.NoError(t, m.Lock(ctx))
	guard := m.Guard(ctx)

	end := time.Now().Add(5 * time.Second)
	for time.Now().Before(end) {
		pttl, err := rc.Do(ctx, rc.B().Pttl().Key(m.Name()).Build()).AsInt64()
		require.NoError(t, err)
		require.Greater(t, pttl, int64(0), "the lock expired while held")
		require.LessOrEqual(t, pttl, int64(1000))
		time.Sleep(50 * time.Millisecond)
	}
	require.NoError(t, guard.Err())
	require.NoError(t, m.Unlock(ctx))
	<-guard.Done()
	assert.ErrorIs(t, context.Cause(guard), context.Canceled, "a release is not a loss")
	n, err := rc.Do(ctx, rc.B().Exists().Key(m.Name()).Build()).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, n)
}

func TestTryLockWaitsForRelease(t *testing.T) {
	c, _ := newClient(t)
	ctx := redistest.Context(t)
	m := rlock.New(c, lockName(t))
	holder := interlock.WithOwner(ctx, 1)
	require.NoError(t, m.Lock(holder))

	ok, err := m.TryLock(ctx, 100*time.Millisecond, 0)
	require.NoError(t, err)
	assert.False(t, ok, "busy for the whole wait")

	go func() {
		time.Sleep(100 * time.Millisecond)
		assert.NoError(t, m.Unlock(holder))
	}()
	start := time.Now()
	ok, err = m.TryLock(ctx, 5*time.Second, time.Second)
	require.NoError(t, err)
	assert.True(t, ok)
	// Well short of the 5s wait; the rest is for the late wake-ups of a
	// loaded machine (latency, not safety).
	assert.Less(t, time.Since(start), 3*time.Second, "woken by the release message, not by the 30s TTL")
	ttl, err := m.TTL(ctx)
	require.NoError(t, err)
	assert.LessOrEqual(t, ttl, time.Second)
	require.NoError(t, m.Unlock(ctx))
}

func TestReleaseMessageLostFallsBackToTTL(t *testing.T) {
	ctx := redistest.Context(t)
	waiters, rc := newClient(t)
	f := redistest.FeaturesOf(t, rc)
	redistest.RequireFeature(t, f, f.ShardedPubSub(), "sharded pub/sub, which the holder publishes with")
	// The holder publishes with SPUBLISH, which a classic SUBSCRIBE never
	// receives: its release message is lost to the waiter.
	holders, _ := newClient(t, interlock.WithPubSubMode(interlock.PubSubSharded))
	name := lockName(t)
	holder := interlock.WithOwner(ctx, 1)
	require.NoError(t, rlock.New(holders, name).LockLease(holder, 1500*time.Millisecond))

	start := time.Now()
	go func() {
		time.Sleep(200 * time.Millisecond)
		assert.NoError(t, rlock.New(holders, name).Unlock(holder))
	}()
	m := rlock.New(waiters, name)
	require.NoError(t, m.Lock(ctx))
	took := time.Since(start)
	t.Logf("acquired after %v", took.Round(time.Millisecond))
	assert.Greater(t, took, time.Second, "no message: the waiter slept for the PTTL")
	assert.Less(t, took, 3*time.Second)
	require.NoError(t, m.Unlock(ctx))
}

func TestErrorsAreWrappedOnce(t *testing.T) {
	c, rc := newClient(t)
	ctx := redistest.Context(t)
	m := rlock.New(c, lockName(t))
	require.NoError(t, rc.Do(ctx, rc.B().Set().Key(m.Name()).Value("not a hash").Build()).Error())
	err := m.Lock(ctx)
	require.Error(t, err)
	assert.Equal(t, 1, strings.Count(err.Error(), "rlock: acquire"), err.Error())
	assert.Contains(t, err.Error(), m.Name()+" holds another type of data: a string")
}
