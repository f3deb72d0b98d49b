package pubsub

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Wake ends the Wait parked on its Subscription, which returns nil, and
// no other.
func TestWakeEndsParkedWait(t *testing.T) {
	rc := sharedServer.Client(t)
	h := newHub(t, rc)
	ctx := testCtx(t)
	name := chanName(t, 0)

	a, err := h.Subscribe(ctx, name, false)
	require.NoError(t, err)
	defer a.Close()
	b, err := h.Subscribe(ctx, name, false)
	require.NoError(t, err)
	defer b.Close()
	woken := waitAsync(ctx, a, -1)
	waitParked(t, h, name, false, 1)
	other := waitAsync(ctx, b, longTTL)
	waitParked(t, h, name, false, 2)

	a.Wake()
	require.NoError(t, recv(t, woken, prompt))
	time.Sleep(quiet)
	assert.Equal(t, 1, entryOf(h, name, false).parked(), "only the woken Subscription left")
	b.Wake()
	require.NoError(t, recv(t, other, prompt))
	assert.Zero(t, entryOf(h, name, false).storedPermits())
}

// A Wake with no Wait parked makes the next Wait return at once, once,
// however many Wakes came.
func TestWakeBeforeWait(t *testing.T) {
	rc := sharedServer.Client(t)
	h := newHub(t, rc)
	ctx := testCtx(t)
	sub, err := h.Subscribe(ctx, chanName(t, 0), false)
	require.NoError(t, err)
	defer sub.Close()

	sub.Wake()
	sub.Wake()
	start := time.Now()
	require.NoError(t, sub.Wait(ctx, longTTL))
	assert.Less(t, time.Since(start), prompt, "the Wake was kept for this Wait")
	start = time.Now()
	require.NoError(t, sub.Wait(ctx, 100*time.Millisecond))
	assert.GreaterOrEqual(t, time.Since(start), 90*time.Millisecond, "kept once")

	// A Wait of no duration takes it too.
	sub.Wake()
	require.NoError(t, sub.Wait(ctx, 0))
	start = time.Now()
	require.NoError(t, sub.Wait(ctx, 100*time.Millisecond))
	assert.GreaterOrEqual(t, time.Since(start), 90*time.Millisecond)
}

// A Wake takes no "0" wake-up of the channel: the published "0" still
// reaches another waiter, parked or not, and a woken Subscription does
// not count as trying for a WakeCount message.
func TestWakeConsumesNoUnlockMessage(t *testing.T) {
	rc := sharedServer.Client(t)
	h := newHub(t, rc)
	ctx := testCtx(t)
	name := chanName(t, 0)

	a, err := h.Subscribe(ctx, name, false)
	require.NoError(t, err)
	defer a.Close()
	b, err := h.Subscribe(ctx, name, false)
	require.NoError(t, err)
	defer b.Close()
	e := entryOf(h, name, false)

	// a parked first: a "0" would go to it. Woken, it leaves the "0" to b.
	woken := waitAsync(ctx, a, longTTL)
	waitParked(t, h, name, false, 1)
	other := waitAsync(ctx, b, longTTL)
	waitParked(t, h, name, false, 2)
	a.Wake()
	require.NoError(t, recv(t, woken, prompt))
	require.EqualValues(t, 1, publish(t, rc, name, "0"))
	require.NoError(t, recv(t, other, prompt), "the \"0\" reached the other waiter")
	assert.Zero(t, e.storedPermits())

	// A Wake kept for a's next Wait leaves a "0" stored for anyone.
	a.Wake()
	require.EqualValues(t, 1, publish(t, rc, name, "0"))
	eventually(t, func() bool { return e.storedPermits() == 1 }, "the \"0\" stored")
	require.NoError(t, b.Wait(ctx, longTTL), "b takes the stored \"0\"")
	b.Pass()
	assert.Zero(t, e.storedPermits())
	start := time.Now()
	require.NoError(t, a.Wait(ctx, longTTL), "a takes its Wake")
	assert.Less(t, time.Since(start), prompt)
}

// A waiter that a Wake woke is not trying for a WakeCount message: a
// message announcing one permit still wakes a parked waiter.
func TestWakeIsNotTrying(t *testing.T) {
	rc := sharedServer.Client(t)
	h := newHub(t, rc)
	ctx := testCtx(t)
	name := chanName(t, 0)

	a, err := h.SubscribeWith(ctx, name, false, WakeCount)
	require.NoError(t, err)
	defer a.Close()
	b, err := h.SubscribeWith(ctx, name, false, WakeCount)
	require.NoError(t, err)
	defer b.Close()
	woken := make(chan error, 1)
	go func() { woken <- a.Wait(ctx, longTTL) }() // a does not pass
	waitParked(t, h, name, false, 1)
	other := waitAsync(ctx, b, longTTL)
	waitParked(t, h, name, false, 2)
	a.Wake()
	require.NoError(t, recv(t, woken, prompt))
	require.EqualValues(t, 1, publish(t, rc, name, "1"))
	require.NoError(t, recv(t, other, prompt), "the permit reached the other waiter")
}
