package interlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/latch"
	"github.com/interlock-go/interlock/rlock"
	"github.com/interlock-go/interlock/semaphore"
)

// WithPubSubMode(PubSubSharded) on a server without sharded pub/sub (Redis
// 6.x) refuses every operation with ErrInvalid, before it sends anything
// that would take a lock or a permit no release could give back; on Redis
// 7.0 and later the same calls work. PubSubAuto works on both. The test
// runs on whichever server the harness starts, so the server matrix covers
// each branch.
func TestShardedModeNeedsRedis7(t *testing.T) {
	ctx := redistest.Context(t)
	rc := redistest.NewClient(t, addr)
	feat := redistest.FeaturesOf(t, rc)
	t.Logf("Redis %s", feat.Version)
	name := redistest.Name(t, "versions:")

	c := newClient(t, interlock.WithPubSubMode(interlock.PubSubSharded))
	m := rlock.New(c, name)
	sem := semaphore.New(c, name+":sem")
	exp := semaphore.NewExpirable(c, name+":exp")
	l := latch.New(c, name+":latch")
	ops := []struct {
		what string
		f    func() error
	}{
		{"TryLock", func() error { _, err := m.TryLock(ctx, 0, 0); return err }},
		{"TrySetPermits", func() error { _, err := sem.TrySetPermits(ctx, 1); return err }},
		{"semaphore TryAcquire", func() error { _, err := sem.TryAcquire(ctx, 1, 0); return err }},
		{"expirable TrySetPermits", func() error { _, err := exp.TrySetPermits(ctx, 1); return err }},
		{"expirable TryAcquire", func() error { _, _, err := exp.TryAcquire(ctx, 1, 0, time.Second); return err }},
		{"TrySetCount", func() error { _, err := l.TrySetCount(ctx, 1); return err }},
	}
	if feat.ShardedPubSub() {
		require.NoError(t, ops[0].f())
		require.NoError(t, m.Unlock(ctx))
		return
	}
	for _, op := range ops {
		err := op.f()
		require.Error(t, err, op.what)
		assert.ErrorIs(t, err, interlock.ErrInvalid, op.what)
		assert.Contains(t, err.Error(), "sharded pub/sub mode needs Redis 7.0 or later", op.what)
		var ie *interlock.Error
		assert.True(t, errors.As(err, &ie), "%s: %T", op.what, err)
	}
	for _, k := range []string{name, name + ":sem", name + ":exp", name + ":latch"} {
		assert.False(t, redistest.Exists(t, rc, k), "%s written", k)
	}
	assert.Zero(t, c.Stats().Holds)

	// PubSubAuto takes classic pub/sub there, as Redisson does: a waiter is
	// woken by the release, long before the lease would free the lock.
	auto := newClient(t)
	a, b := rlock.New(auto, name), rlock.New(newClient(t), name)
	require.NoError(t, a.LockLease(ctx, time.Minute))
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		ok, err := b.TryLock(ctx, 20*time.Second, 0)
		if err == nil && !ok {
			err = errors.New("not acquired")
		}
		if err == nil {
			err = b.Unlock(ctx)
		}
		got <- err
	}()
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, a.Unlock(ctx))
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter was not woken by the release")
	}
}
