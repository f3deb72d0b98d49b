package rlock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/rlock"
)

// A release that announces nothing (Redisson's spin unlock; here the hash
// deleted by hand) reaches a waiter with WithPollInterval within about that
// interval, long before the holder's TTL (3s) would have.
func TestPollIntervalFindsSilentReleases(t *testing.T) {
	ctx := redistest.Context(t)
	holder, rc := newClient(t)
	waiter, _ := newClient(t)
	name := lockName(t)
	require.NoError(t, rlock.New(holder, name).LockLease(ctx, 3*time.Second))

	polled := make(chan time.Time, 1)
	go func() {
		if rlock.New(waiter, name, rlock.WithPollInterval(100*time.Millisecond)).Lock(ctx) == nil {
			polled <- time.Now()
		}
	}()
	time.Sleep(300 * time.Millisecond)
	released := time.Now()
	require.NoError(t, rc.Do(ctx, rc.B().Del().Key(name).Build()).Error()) // no message
	select {
	case at := <-polled:
		// A poll interval, and a second for the late timers of a loaded
		// machine (latency): still well before the TTL's 2.7s.
		assert.Less(t, at.Sub(released), 100*time.Millisecond+time.Second, "found by its poll")
	case <-time.After(5 * time.Second):
		t.Fatal("the polling waiter never took the lock")
	}
}

func TestPollIntervalValidates(t *testing.T) {
	c, _ := newClient(t)
	err := rlock.New(c, lockName(t), rlock.WithPollInterval(0)).Lock(redistest.Context(t))
	assert.ErrorIs(t, err, interlock.ErrInvalid)
}

// A poll interval under 1ms is refused by every method, with nothing sent.
func TestPollIntervalTooShort(t *testing.T) {
	ctx := redistest.Context(t)
	c, _ := newClient(t)
	m := rlock.New(c, lockName(t), rlock.WithPollInterval(time.Microsecond))
	err := m.Lock(ctx)
	require.ErrorIs(t, err, interlock.ErrInvalid)
	assert.ErrorContains(t, err, "poll interval 1µs must be at least 1ms")
	_, err = m.IsLocked(ctx)
	assert.ErrorIs(t, err, interlock.ErrInvalid)
}
