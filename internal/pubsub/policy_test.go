package pubsub

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/redistest"
)

// returned counts the results that have arrived since the last call,
// without waiting; it sets the channels it read to nil.
func returned(t *testing.T, results []<-chan error) (n int) {
	t.Helper()
	for i, r := range results {
		if r == nil {
			continue
		}
		select {
		case err := <-r:
			require.NoError(t, err)
			results[i] = nil
			n++
		default:
		}
	}
	return n
}

// recvAll waits for the results not read yet.
func recvAll(t *testing.T, results []<-chan error) {
	t.Helper()
	for _, r := range results {
		if r != nil {
			require.NoError(t, recv(t, r, prompt))
		}
	}
}

// entryOf0 is entryOf for a classic channel, with h.mu held.
func entryOf0(h *Hub, channel string) *entry { return h.entries[chanKey{name: channel}] }

// parkedStays asserts that the number of parked waiters of name stays n
// for the quiet window.
func parkedStays(t *testing.T, h *Hub, name string, sharded bool, n int, after string) {
	t.Helper()
	time.Sleep(quiet)
	assert.Equal(t, n, entryOf(h, name, sharded).parked(), "parked waiters after %s", after)
}

// Under WakeCount a payload n > 0 wakes at most n waiters; any other
// payload wakes nobody.
func TestWakeCountWakesAtMostN(t *testing.T) {
	rc := sharedServer.Client(t)
	h := newHub(t, rc)
	ctx := testCtx(t)
	name := chanName(t, 0)

	const n = 5
	subs := make([]*Subscription, n)
	results := make([]<-chan error, n)
	for i := range n {
		sub, err := h.SubscribeWith(ctx, name, false, WakeCount)
		require.NoError(t, err)
		defer sub.Close()
		subs[i] = sub
		results[i] = waitAsync(ctx, sub, longTTL)
	}
	waitParked(t, h, name, false, n)
	e := entryOf(h, name, false)

	require.EqualValues(t, 1, publish(t, rc, name, "3"))
	eventually(t, func() bool { return e.parked() == n-3 }, "3 waiters to leave")
	parkedStays(t, h, name, false, n-3, `"3"`)
	assert.Equal(t, 3, returned(t, results), `"3" wakes 3`)
	assert.Zero(t, e.storedPermits(), "all 3 wake-ups went to parked waiters")

	for _, payload := range []string{"0", "-2", "x", "", "1.5", " 1", "99999999999999999999"} {
		publish(t, rc, name, payload)
		parkedStays(t, h, name, false, n-3, "payload "+payload)
		assert.Zero(t, e.storedPermits(), "payload %q", payload)
	}
	assert.Zero(t, returned(t, results), "nobody woken by a payload that is not a positive count")

	require.EqualValues(t, 1, publish(t, rc, name, "1"))
	eventually(t, func() bool { return e.parked() == n-4 }, "1 waiter to leave")
	parkedStays(t, h, name, false, n-4, `"1"`)
	require.EqualValues(t, 1, publish(t, rc, name, "4"))
	eventually(t, func() bool { return e.parked() == 0 }, "the last waiter to leave")
	recvAll(t, results)

	// The rest of a count is stored, at most one wake-up per Subscription.
	eventually(t, func() bool { return e.storedPermits() == 3 }, `the 3 left over from "4"`)
	require.EqualValues(t, 1, publish(t, rc, name, "100"))
	eventually(t, func() bool { return e.storedPermits() == n }, "permits up to the cap")
	time.Sleep(quiet)
	assert.Equal(t, n, e.storedPermits(), "capped at one per Subscription")
	for _, s := range subs[2:] {
		s.Close()
	}
	assert.Equal(t, 2, e.storedPermits(), "the cap follows the Subscriptions")
	start := time.Now()
	require.NoError(t, subs[0].Wait(ctx, longTTL))
	require.NoError(t, subs[1].Wait(ctx, longTTL))
	assert.Less(t, time.Since(start), prompt, "stored wake-ups are consumed at once")
	assert.Zero(t, e.storedPermits())
	start = time.Now()
	require.NoError(t, subs[0].Wait(ctx, 100*time.Millisecond))
	assert.GreaterOrEqual(t, time.Since(start), 90*time.Millisecond, "no wake-up left")
}

// WakeCount on a sharded channel of a cluster.
func TestWakeCountSharded(t *testing.T) {
	rc := sharedCluster.Client(t)
	requireSharded(t, rc)
	h := newHub(t, rc)
	ctx := testCtx(t)
	name := chanName(t, 0)

	const n = 3
	results := make([]<-chan error, n)
	for i := range n {
		sub, err := h.SubscribeWith(ctx, name, true, WakeCount)
		require.NoError(t, err)
		defer sub.Close()
		results[i] = waitAsync(ctx, sub, longTTL)
	}
	waitParked(t, h, name, true, n)
	e := entryOf(h, name, true)
	require.EqualValues(t, 1, spublish(t, rc, name, "2"))
	eventually(t, func() bool { return e.parked() == 1 }, "2 waiters to leave")
	parkedStays(t, h, name, true, 1, `"2"`)
	spublish(t, rc, name, "0")
	spublish(t, rc, name, "x")
	parkedStays(t, h, name, true, 1, `"0" and "x"`)
	spublish(t, rc, name, "1")
	for _, r := range results {
		require.NoError(t, recv(t, r, prompt))
	}
	assert.Zero(t, e.storedPermits())
}

// Under WakeOnZero "0" wakes every waiter and any other payload nobody.
func TestWakeOnZero(t *testing.T) {
	rc := sharedServer.Client(t)
	h := newHub(t, rc)
	ctx := testCtx(t)
	name := chanName(t, 0)

	const n = 4
	subs := make([]*Subscription, n)
	results := make([]<-chan error, n)
	for i := range n {
		sub, err := h.SubscribeWith(ctx, name, false, WakeOnZero)
		require.NoError(t, err)
		defer sub.Close()
		subs[i] = sub
		results[i] = waitAsync(ctx, sub, longTTL)
	}
	waitParked(t, h, name, false, n)
	e := entryOf(h, name, false)
	for _, payload := range []string{"1", "2", "-1", "x", "", "00"} {
		publish(t, rc, name, payload)
		parkedStays(t, h, name, false, n, "payload "+payload)
	}
	assert.Zero(t, returned(t, results))
	assert.Zero(t, e.storedPermits())

	require.EqualValues(t, 1, publish(t, rc, name, "0"))
	recvAll(t, results)
	assert.Zero(t, e.storedPermits(), "a wake-all stores nothing")
	// Nothing is owed after the wake-all: the next Wait times out.
	start := time.Now()
	require.NoError(t, subs[0].Wait(ctx, 100*time.Millisecond))
	assert.GreaterOrEqual(t, time.Since(start), 90*time.Millisecond)
}

// WakeLock, the default, is the locks' rule as before: "0" wakes one
// waiter, any other payload (a count too) every waiter.
func TestWakeLockUnchanged(t *testing.T) {
	rc := sharedServer.Client(t)
	h := newHub(t, rc)
	ctx := testCtx(t)
	name := chanName(t, 0)

	const n = 4
	results := make([]<-chan error, n)
	for i := range n {
		var sub *Subscription
		var err error
		if i%2 == 0 {
			sub, err = h.Subscribe(ctx, name, false)
		} else {
			sub, err = h.SubscribeWith(ctx, name, false, WakeLock)
		}
		require.NoError(t, err, "Subscribe is SubscribeWith(WakeLock)")
		defer sub.Close()
		results[i] = waitAsync(ctx, sub, longTTL)
	}
	waitParked(t, h, name, false, n)
	e := entryOf(h, name, false)
	publish(t, rc, name, "0")
	eventually(t, func() bool { return e.parked() == n-1 }, "one waiter to leave")
	parkedStays(t, h, name, false, n-1, `"0"`)
	publish(t, rc, name, "2")
	for _, r := range results {
		require.NoError(t, recv(t, r, prompt))
	}
	assert.Zero(t, e.parked(), `"2" wakes all under WakeLock`)
	assert.Zero(t, e.storedPermits())
}

// Every Subscription of a live channel must ask for the channel's policy.
func TestSubscribeWithOtherPolicy(t *testing.T) {
	rc := sharedServer.Client(t)
	h := newHub(t, rc)
	ctx := testCtx(t)
	name := chanName(t, 0)

	a, err := h.SubscribeWith(ctx, name, false, WakeCount)
	require.NoError(t, err)
	b, err := h.SubscribeWith(ctx, name, false, WakeCount)
	require.NoError(t, err, "the same policy")
	for _, p := range []Policy{WakeLock, WakeOnZero} {
		_, err := h.SubscribeWith(ctx, name, false, p)
		require.Error(t, err, "%v", p)
		assert.Contains(t, err.Error(), WakeCount.String())
		assert.Contains(t, err.Error(), p.String())
	}
	_, err = h.Subscribe(ctx, name, false)
	require.Error(t, err, "Subscribe asks for WakeLock")
	assert.Equal(t, 1, h.Channels())
	h.mu.Lock()
	refs := entryOf0(h, name).refs
	h.mu.Unlock()
	assert.Equal(t, 2, refs, "a refused Subscribe holds no reference")

	// The sharded channel of that name is another channel.
	if redistest.FeaturesOf(t, rc).ShardedPubSub() {
		s, err := h.SubscribeWith(ctx, name, true, WakeOnZero)
		require.NoError(t, err)
		s.Close()
	}

	a.Close()
	b.Close()
	c, err := h.SubscribeWith(ctx, name, false, WakeOnZero)
	require.NoError(t, err, "a policy lasts as long as the channel's Subscriptions")
	defer c.Close()
	assert.Equal(t, WakeOnZero, entryOf(h, name, false).policy)

	assert.Equal(t, "lock", WakeLock.String())
	assert.Equal(t, "count", WakeCount.String())
	assert.Equal(t, "on-zero", WakeOnZero.String())
	assert.Equal(t, "Policy(9)", Policy(9).String())
}
