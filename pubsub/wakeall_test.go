package pubsub

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A wake-all that reaches a channel while one of its Subscriptions is not
// parked (its owner is re-checking the lock) is not lost to it: that
// Subscription's next Wait returns at once, and only once.
func TestWakeAllReachesSubscriptionBetweenWaits(t *testing.T) {
	rc := sharedServer.Client(t)
	h := newHub(t, rc)
	ctx := testCtx(t)
	name := chanName(t, 0)

	parked, err := h.Subscribe(ctx, name, false)
	require.NoError(t, err)
	defer parked.Close()
	busy, err := h.Subscribe(ctx, name, false)
	require.NoError(t, err)
	defer busy.Close()

	woken := waitAsync(ctx, parked, longTTL)
	waitParked(t, h, name, false, 1)
	require.EqualValues(t, 1, publish(t, rc, name, "1"))
	require.NoError(t, recv(t, woken, prompt))

	start := time.Now()
	require.NoError(t, busy.Wait(ctx, longTTL), "the wake-all is seen by the next Wait")
	assert.Less(t, time.Since(start), prompt)
	start = time.Now()
	require.NoError(t, busy.Wait(ctx, 100*time.Millisecond))
	assert.GreaterOrEqual(t, time.Since(start), 90*time.Millisecond, "seen once, not again")
	start = time.Now()
	require.NoError(t, parked.Wait(ctx, 100*time.Millisecond))
	assert.GreaterOrEqual(t, time.Since(start), 90*time.Millisecond, "a woken waiter has seen it already")

	// A Subscription made (or joined) after the wake-all has not missed it.
	late, err := h.Subscribe(ctx, name, false)
	require.NoError(t, err)
	defer late.Close()
	start = time.Now()
	require.NoError(t, late.Wait(ctx, 100*time.Millisecond))
	assert.GreaterOrEqual(t, time.Since(start), 90*time.Millisecond)
	assert.Equal(t, 0, entryOf(h, name, false).storedPermits(), "a wake-all stores no permit")
}

// Hub.WakeAll wakes the local waiters as a "1" would, sending nothing.
func TestHubWakeAllIsLocal(t *testing.T) {
	rc := sharedServer.Client(t)
	h := newHub(t, rc)
	ctx := testCtx(t)
	name := chanName(t, 0)
	h.WakeAll(name, false) // no Subscription: nothing to do

	const n = 3
	results := make([]<-chan error, n)
	for i := range n {
		sub, err := h.Subscribe(ctx, name, false)
		require.NoError(t, err)
		defer sub.Close()
		results[i] = waitAsync(ctx, sub, longTTL)
	}
	waitParked(t, h, name, false, n)
	h.WakeAll(name, true) // the sharded channel of that name has no waiters
	h.WakeAll(name, false)
	for _, r := range results {
		require.NoError(t, recv(t, r, prompt))
	}
}
