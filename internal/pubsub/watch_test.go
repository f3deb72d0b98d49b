package pubsub

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Watcher hears every message, "0" included, and takes no waiter's
// wake-up: a parked waiter still wakes, and with none parked the "0" is
// still stored for the next Wait.
func TestWatcherTakesNoWakeUp(t *testing.T) {
	rc := sharedServer.Client(t)
	h := newHub(t, rc)
	ctx := testCtx(t)
	name := chanName(t, 0)

	w, err := h.Watch(ctx, name, false, WakeLock)
	require.NoError(t, err)
	sub, err := h.Subscribe(ctx, name, false)
	require.NoError(t, err)
	defer sub.Close()
	heard := func() {
		t.Helper()
		select {
		case <-w.C():
		case <-time.After(prompt):
			t.Fatal("the Watcher heard nothing")
		}
	}

	woke := waitAsync(ctx, sub, longTTL)
	waitParked(t, h, name, false, 1)
	publish(t, rc, name, "0")
	heard()
	require.NoError(t, recv(t, woke, prompt), "the waiter woke too")

	publish(t, rc, name, "0")
	heard()
	e := entryOf(h, name, false)
	eventually(t, func() bool { return e.storedPermits() == 1 }, "the permit stored for the waiter")
	start := time.Now()
	require.NoError(t, sub.Wait(ctx, longTTL))
	assert.Less(t, time.Since(start), prompt)

	publish(t, rc, name, "1")
	heard()
	for range 3 {
		publish(t, rc, name, "x")
	}
	heard()
	select {
	case <-w.C():
		// The last of the three may land after the first was read.
	case <-time.After(quiet):
	}

	w.Close()
	w.Close()
	assert.Empty(t, e.watchers)
}
