package pubsub_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/pubsub"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, redistest.GoleakOptions()...) }

// A "0" wakes one waiter, another payload every waiter; Close ends them.
func TestHub(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := redistest.Standalone(t)
	rc := redistest.NewClient(t, srv.Addr())
	_, err := pubsub.NewHub(rc, pubsub.WithErrorHandler(nil))
	require.Error(t, err, "a nil handler")
	hub, err := pubsub.NewHub(rc, pubsub.WithReconnectBackoff(func(int) time.Duration { return 10 * time.Millisecond }))
	require.NoError(t, err)

	const waiters = 3
	woken := make(chan error, waiters)
	subs := make([]*pubsub.Subscription, waiters)
	for i := range subs {
		subs[i], err = hub.Subscribe(ctx, "signals", false)
		require.NoError(t, err)
	}
	for _, s := range subs {
		go func() { woken <- s.Wait(ctx, -1) }()
	}
	publish := func(msg string) {
		t.Helper()
		require.NoError(t, rc.Do(ctx, rc.B().Publish().Channel("signals").Message(msg).Build()).Error())
	}
	time.Sleep(100 * time.Millisecond) // let them park
	publish("0")
	require.NoError(t, <-woken)
	select {
	case err := <-woken:
		t.Fatalf("a second waiter woke on one \"0\": %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	publish("1")
	for range waiters - 1 {
		select {
		case err := <-woken:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("a \"1\" did not wake every waiter")
		}
	}

	// A timed Wait with nothing sent returns at its deadline. (A new
	// subscription: the "1" left the one woken by "0" a wake-up to take.)
	quiet, err := hub.Subscribe(ctx, "signals", false)
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, quiet.Wait(ctx, 50*time.Millisecond))
	assert.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)
	quiet.Close()

	subs[0].Close()
	assert.ErrorIs(t, subs[0].Wait(ctx, 0), pubsub.ErrSubscriptionClosed)
	hub.Close()
	assert.ErrorIs(t, subs[1].Wait(ctx, 0), pubsub.ErrClosed)
	_, err = hub.Subscribe(ctx, "signals", false)
	assert.ErrorIs(t, err, pubsub.ErrClosed)
}
