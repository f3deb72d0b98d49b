package pubsub

import (
	"context"
	"errors"
	"testing"
	"time"
)

// FuzzDispatch sends arbitrary payloads to a subscribed channel, straight
// into the dispatch path or through a real PUBLISH, and checks the
// documented wake-up rules: nothing panics; "0" wakes exactly one parked
// waiter (or stores one permit when none is parked); any other payload
// wakes every parked waiter and stores nothing; a waiter of another
// channel is never woken.
func FuzzDispatch(f *testing.F) {
	for _, seed := range []string{"0", "1", "", "00", "0 ", " 0", "-0", "garbage", "\x00", "\xff\xfe\xfd", "0\r\n", "message"} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	rc := sharedServer.Client(f)
	h, err := NewHub(rc)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(h.Close)
	const ch, otherCh = "pubsubfuzz:dispatch", "pubsubfuzz:other"
	ctx := context.Background()
	a, errA := h.Subscribe(ctx, ch, false)
	b, errB := h.Subscribe(ctx, ch, false)
	other, errO := h.Subscribe(ctx, otherCh, false)
	if errA != nil || errB != nil || errO != nil {
		f.Fatal(errA, errB, errO)
	}
	f.Cleanup(a.Close)
	f.Cleanup(b.Close)
	f.Cleanup(other.Close)
	e, eo := entryOf(h, ch, false), entryOf(h, otherCh, false)

	f.Fuzz(func(t *testing.T, payload []byte, viaServer bool) {
		msg := string(payload)
		deliver := func() {
			if viaServer {
				publish(t, rc, ch, msg)
			} else {
				h.dispatch(chanKey{name: ch}, msg)
			}
		}
		// Start clean: no stored wake-ups, nothing missed.
		for e.storedPermits() > 0 {
			if err := a.Wait(ctx, 0); err != nil {
				t.Fatal(err)
			}
		}
		_, _ = a.Wait(ctx, 0), b.Wait(ctx, 0)

		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		results := []<-chan error{waitAsync(wctx, a, -1), waitAsync(wctx, b, -1)}
		otherRes := waitAsync(wctx, other, -1)
		waitParked(t, h, ch, false, 2)
		waitParked(t, h, otherCh, false, 1)

		woken := 2
		if msg == unlockMessage {
			woken = 1
		}
		deliver()
		eventually(t, func() bool { return e.parked() == 2-woken }, "%d of 2 waiters woken by %q", woken, msg)
		if e.storedPermits() != 0 {
			t.Fatalf("%q stored a permit although a waiter was parked", msg)
		}
		if eo.parked() != 1 {
			t.Fatalf("%q on %s woke a waiter of %s", msg, ch, otherCh)
		}
		// The woken Waits return nil; the others return only when cancelled.
		for range woken {
			select {
			case err := <-results[0]:
				results[0] = nil
				if err != nil {
					t.Fatalf("%q: woken Wait returned %v", msg, err)
				}
			case err := <-results[1]:
				results[1] = nil
				if err != nil {
					t.Fatalf("%q: woken Wait returned %v", msg, err)
				}
			case <-time.After(prompt):
				t.Fatalf("%q: a woken Wait did not return", msg)
			}
		}
		cancel()
		for _, r := range append(results, otherRes) {
			if r == nil {
				continue
			}
			if err := recv(t, r, prompt); !errors.Is(err, context.Canceled) {
				t.Fatalf("%q: a Wait that was not woken returned %v", msg, err)
			}
		}

		// Nobody parked: "0" is kept as one permit, anything else as a
		// missed wake-up of every Subscription, and nothing else.
		deliver()
		if msg == unlockMessage {
			eventually(t, func() bool { return e.storedPermits() == 1 }, "a permit stored by %q", msg)
		} else {
			eventually(t, func() bool {
				e.mu.Lock()
				defer e.mu.Unlock()
				return e.wakeAlls != a.seen && e.wakeAlls != b.seen
			}, "every Subscription told of %q", msg)
			if e.storedPermits() != 0 {
				t.Fatalf("%q stored a permit", msg)
			}
		}
		if eo.storedPermits() != 0 {
			t.Fatalf("%q on %s stored a permit for %s", msg, ch, otherCh)
		}
	})
}
