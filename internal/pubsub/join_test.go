package pubsub

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestJoinQueuesBehindParkedWaiters(t *testing.T) {
	rc := sharedServer.Client(t)
	h := newHub(t, rc)
	ctx := testCtx(t)
	ch := chanName(t, 0)

	_, _, ok := h.Join(ch, false)
	assert.False(t, ok, "nothing subscribed: no queue to join")

	first, err := h.Subscribe(ctx, ch, false)
	require.NoError(t, err)
	defer first.Close()
	_, _, ok = h.Join(ch, false)
	assert.False(t, ok, "subscribed but nobody parked")

	firstWoken := make(chan error, 1)
	parking := time.Now()
	go func() { firstWoken <- first.Wait(ctx, 2*time.Second) }()
	eventually(t, func() bool { return entryOf(h, ch, false).parked() == 1 }, "first waiter parked")

	second, d, ok := h.Join(ch, false)
	require.True(t, ok)
	defer second.Close()
	// The last parked waiter's bound, less the time since it parked, however
	// long a loaded machine took (latency).
	assert.LessOrEqual(t, d, 2*time.Second, "the last parked waiter's bound")
	assert.GreaterOrEqual(t, d, 2*time.Second-time.Since(parking), "the last parked waiter's bound")
	assert.Equal(t, 1, h.Channels(), "joining sends nothing and shares the entry")

	secondWoken := make(chan error, 1)
	go func() { secondWoken <- second.Wait(ctx, d) }()
	eventually(t, func() bool { return entryOf(h, ch, false).parked() == 2 }, "second waiter parked")

	// A "0" wakes the waiter that parked first: the queue is FIFO.
	publish(t, rc, ch, "0")
	select {
	case err := <-firstWoken:
		require.NoError(t, err)
	case <-time.After(prompt):
		t.Fatal("first waiter not woken")
	}
	select {
	case <-secondWoken:
		t.Fatal("the joined waiter was woken out of turn")
	case <-time.After(100 * time.Millisecond):
	}
	publish(t, rc, ch, "0")
	select {
	case err := <-secondWoken:
		require.NoError(t, err)
	case <-time.After(prompt):
		t.Fatal("joined waiter not woken")
	}

	// A waiter parked for a message only makes the bound negative.
	go func() { firstWoken <- first.Wait(ctx, -1) }()
	eventually(t, func() bool { return entryOf(h, ch, false).parked() == 1 }, "waiter parked")
	third, d, ok := h.Join(ch, false)
	require.True(t, ok)
	assert.Negative(t, d)
	third.Close()
	publish(t, rc, ch, "1")
	require.NoError(t, <-firstWoken)
}
