package spin_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/rlock"
	"github.com/interlock-go/interlock/spin"
)

// A spin waiter holds no subscription, takes the lock soon after its
// release (within the longest pause, 128ms, plus slack) and a TryLock
// ends at its deadline, not a pause later.
func TestWaitersPollWithoutSubscribing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	holder, _ := newClient(t)
	waiter, rc := newClient(t)
	name := "spin-test:" + t.Name()
	require.NoError(t, spin.New(holder, name).Lock(ctx))

	start := time.Now()
	ok, err := spin.New(waiter, name).TryLock(ctx, 300*time.Millisecond, 0)
	took := time.Since(start)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.GreaterOrEqual(t, took, 300*time.Millisecond)
	// A second over the deadline for the late timers of a loaded machine
	// (latency, not safety).
	assert.Less(t, took, 300*time.Millisecond+time.Second, "a pause is cut short at the deadline")

	got := make(chan time.Time, 1)
	go func() {
		if spin.New(waiter, name).Lock(ctx) == nil {
			got <- time.Now()
		}
	}()
	time.Sleep(400 * time.Millisecond) // the waiter's pauses reach 128ms
	assert.Zero(t, waiter.Stats().Channels, "no subscription")
	n, err := rc.Do(ctx, rc.B().PubsubNumsub().Channel(keys.LockChannel(name)).Build()).AsIntMap()
	require.NoError(t, err)
	assert.Zero(t, n[keys.LockChannel(name)], "no subscriber on the server")

	released := time.Now()
	require.NoError(t, spin.New(holder, name).Unlock(ctx))
	select {
	case at := <-got:
		// The longest pause, and a second for the late timers of a loaded
		// machine (latency, not safety).
		assert.Less(t, at.Sub(released), 128*time.Millisecond+time.Second)
	case <-ctx.Done():
		t.Fatal("the waiter never took the lock")
	}
}

// A spin unlock publishes RLock's release message, so an RLock waiter on
// the same name is woken at once, long before the holder's TTL.
func TestUnlockWakesRLockWaiters(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	holder, _ := newClient(t)
	waiter, _ := newClient(t)
	name := "spin-test:" + t.Name()
	require.NoError(t, spin.New(holder, name).Lock(ctx)) // watchdog: TTL 30s

	got := make(chan time.Time, 1)
	go func() {
		if rlock.New(waiter, name).Lock(ctx) == nil {
			got <- time.Now()
		}
	}()
	require.Eventually(t, func() bool { return waiter.Stats().Channels == 1 }, 5*time.Second, 5*time.Millisecond)
	released := time.Now()
	require.NoError(t, spin.New(holder, name).Unlock(ctx))
	select {
	case at := <-got:
		// Well short of the 30s TTL; the rest is for the late wake-ups of
		// a loaded machine (latency, not safety).
		assert.Less(t, at.Sub(released), 3*time.Second, "woken by the message")
	case <-ctx.Done():
		t.Fatal("the RLock waiter never took the lock")
	}
}

func TestBadBackoffIsRefused(t *testing.T) {
	c, _ := newClient(t)
	ctx := context.Background()
	for _, m := range []*spin.Mutex{
		spin.New(c, "spin-test:bad", spin.WithConstantBackoff(0)),
		spin.New(c, "spin-test:bad", spin.WithExponentialBackoff(0, time.Second, 2)),
		spin.New(c, "spin-test:bad", spin.WithExponentialBackoff(time.Second, time.Millisecond, 2)),
		spin.New(c, "spin-test:bad", spin.WithExponentialBackoff(time.Millisecond, time.Second, 0)),
	} {
		assert.ErrorIs(t, m.Lock(ctx), interlock.ErrInvalid)
	}
}
