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

// A wake-all reaches the parked waiters one at a time, in the order they
// parked: each is signalled only when the one before it hands its turn on,
// so lock waiters try in the order they queued. Waiters that park after
// the wake-all are not part of it.
func TestWakeAllRelaysInParkingOrder(t *testing.T) {
	e := newEntry(chanKey{name: "relay"}, 0, WakeLock)
	ws := make([]*waiter, 4)
	e.mu.Lock()
	for i := range ws {
		ws[i] = &waiter{ch: make(chan struct{}, 1)}
		e.push(ws[i])
	}
	e.mu.Unlock()
	signalled := func() []int {
		var got []int
		for i, w := range ws {
			if len(w.ch) > 0 {
				got = append(got, i)
			}
		}
		return got
	}

	e.wakeAll()
	assert.Equal(t, []int{0}, signalled(), "only the longest-parked waiter first")
	late := &waiter{ch: make(chan struct{}, 1)}
	e.mu.Lock()
	e.push(late)
	e.mu.Unlock()
	for i := range ws {
		<-ws[i].ch // waiter i is woken, then hands its turn on
		e.mu.Lock()
		e.relayLocked()
		e.mu.Unlock()
		if i+1 < len(ws) {
			assert.Equal(t, []int{i + 1}, signalled(), "after waiter %d left", i)
		}
	}
	assert.Empty(t, signalled())
	assert.Empty(t, late.ch, "a waiter that parked after the wake-all is not owed it")
	assert.Equal(t, 1, e.parked())
}

// The next waiter's turn comes when the one before it passes, not when it
// merely returns from Wait: its attempt is answered first.
func TestWakeAllTurnWaitsForPass(t *testing.T) {
	rc := sharedServer.Client(t)
	h := newHub(t, rc)
	ctx := testCtx(t)
	name := chanName(t, 0)

	first, err := h.Subscribe(ctx, name, false)
	require.NoError(t, err)
	defer first.Close()
	second, err := h.Subscribe(ctx, name, false)
	require.NoError(t, err)
	defer second.Close()
	firstDone := make(chan error, 1)
	go func() { firstDone <- first.Wait(ctx, longTTL) }() // does not pass
	waitParked(t, h, name, false, 1)
	secondDone := waitAsync(ctx, second, longTTL)
	waitParked(t, h, name, false, 2)

	require.EqualValues(t, 1, publish(t, rc, name, "1"))
	require.NoError(t, recv(t, firstDone, prompt))
	time.Sleep(100 * time.Millisecond)
	assert.Equal(t, 1, entryOf(h, name, false).parked(), "the second waits for the first to pass")
	first.Pass()
	require.NoError(t, recv(t, secondDone, prompt))
}
