package pubsub

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestScale parks 10,000 goroutines on 1,000 channels and checks that they
// share one subscription connection and a constant number of hub
// goroutines, then wakes them all.
func TestScale(t *testing.T) {
	if testing.Short() {
		t.Skip("scale test skipped in -short mode")
	}
	const nChannels, nWaiters = 1000, 10000
	rc := sharedServer.Client(t)
	h := newHub(t, rc)
	ctx := testCtx(t)
	eventually(t, func() bool { return len(pubsubClients(t, rc)) == 0 }, "earlier subscription connections to go")
	baseline := runtime.NumGoroutine()

	names := make([]string, nChannels)
	for i := range names {
		names[i] = fmt.Sprintf("pubsubtest:%s:%d", t.Name(), i)
	}
	start := time.Now()
	subs := make([]*Subscription, nWaiters)
	errs := make(chan error, nWaiters)
	for i := range subs {
		go func() {
			var err error
			subs[i], err = h.Subscribe(ctx, names[i%nChannels], false)
			errs <- err
		}()
	}
	for range nWaiters {
		require.NoError(t, <-errs)
	}
	subscribed := time.Since(start)
	results := make(chan error, nWaiters)
	for _, s := range subs {
		go func() {
			err := s.Wait(ctx, longTTL)
			s.Pass()
			results <- err
		}()
	}
	eventually(t, func() bool {
		n := 0
		for _, name := range names {
			n += entryOf(h, name, false).parked()
		}
		return n == nWaiters
	}, "all waiters parked")
	hubGoroutines := runtime.NumGoroutine() - baseline - nWaiters
	assert.Len(t, pubsubClients(t, rc), 1, "one subscription connection")
	assert.LessOrEqual(t, hubGoroutines, 4, "hub goroutines: ours plus rueidis' reader and writer")

	start = time.Now()
	cmds := make(rueidis.Commands, 0, nChannels)
	for _, name := range names {
		cmds = append(cmds, rc.B().Publish().Channel(name).Message("1").Build())
	}
	for _, r := range rc.DoMulti(context.Background(), cmds...) {
		n, err := r.AsInt64()
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
	}
	for range nWaiters {
		require.NoError(t, recv(t, results, prompt))
	}
	woken := time.Since(start)

	start = time.Now()
	for _, s := range subs {
		s.Close()
	}
	assert.Equal(t, 0, h.Channels())
	eventually(t, func() bool {
		return len(pubsubChannels(t, rc, "CHANNELS", "pubsubtest:"+t.Name()+":*")) == 0
	}, "PUBSUB CHANNELS to become empty")
	unsubscribed := time.Since(start)
	t.Logf("%d subscriptions on %d channels: subscribe %v, hub goroutines %d, wake all %v, unsubscribe %v",
		nWaiters, nChannels, subscribed, hubGoroutines, woken, unsubscribed)
}
