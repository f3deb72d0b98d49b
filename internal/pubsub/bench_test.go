package pubsub

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// benchHub returns a client of the shared server and a hub on
// it, both closed when b ends.
func benchHub(b *testing.B) (rueidis.Client, *Hub) {
	b.Helper()
	rc := sharedServer.Client(b)
	h, err := NewHub(rc)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(h.Close)
	return rc, h
}

// BenchmarkWakeOne measures PUBLISH "0" to the return of a parked Wait.
func BenchmarkWakeOne(b *testing.B) {
	rc, h := benchHub(b)
	ctx := context.Background()
	sub, err := h.Subscribe(ctx, "pubsubbench:wake", false)
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Close()
	cmd := rc.B().Publish().Channel("pubsubbench:wake").Message("0").Build().Pin()
	b.ResetTimer()
	for b.Loop() {
		if err := rc.Do(ctx, cmd).Error(); err != nil {
			b.Fatal(err)
		}
		if err := sub.Wait(ctx, time.Minute); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSubscribeShared measures Subscribe+Close on a channel that is
// already subscribed (reference counting only, no round trip).
func BenchmarkSubscribeShared(b *testing.B) {
	_, h := benchHub(b)
	ctx := context.Background()
	keep, err := h.Subscribe(ctx, "pubsubbench:shared", false)
	if err != nil {
		b.Fatal(err)
	}
	defer keep.Close()
	for b.Loop() {
		s, err := h.Subscribe(ctx, "pubsubbench:shared", false)
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}

// BenchmarkSubscribeNew measures Subscribe+Close of a new channel: one
// confirmed SUBSCRIBE round trip plus an asynchronous UNSUBSCRIBE.
func BenchmarkSubscribeNew(b *testing.B) {
	_, h := benchHub(b)
	ctx := context.Background()
	i := 0
	for b.Loop() {
		s, err := h.Subscribe(ctx, fmt.Sprintf("pubsubbench:new:%d", i), false)
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
		i++
	}
}

// BenchmarkBaselinePing is the floor to compare BenchmarkWakeOne with: one
// round trip through the same client.
func BenchmarkBaselinePing(b *testing.B) {
	rc, _ := benchHub(b)
	ctx := context.Background()
	cmd := rc.B().Ping().Build().Pin()
	for b.Loop() {
		if err := rc.Do(ctx, cmd).Error(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBaselineReceive is rueidis' own pub/sub path without the hub:
// PUBLISH through one client, delivered to a Receive callback of another
// (as with the hub, the message travels on a second connection).
func BenchmarkBaselineReceive(b *testing.B) {
	rc, _ := benchHub(b)
	sub := sharedServer.Client(b)
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan struct{}, 1)
	ready := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		sctx := rueidis.WithOnSubscriptionHook(ctx, func(rueidis.PubSubSubscription) {
			select {
			case <-ready:
			default:
				close(ready)
			}
		})
		_ = sub.Receive(sctx, sub.B().Subscribe().Channel("pubsubbench:baseline").Build(), func(rueidis.PubSubMessage) {
			got <- struct{}{}
		})
	}()
	defer func() { cancel(); <-done }()
	<-ready
	cmd := rc.B().Publish().Channel("pubsubbench:baseline").Message("0").Build().Pin()
	for b.Loop() {
		if err := rc.Do(ctx, cmd).Error(); err != nil {
			b.Fatal(err)
		}
		<-got
	}
}
