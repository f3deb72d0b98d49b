package rlock_test

import (
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/rlock"
)

// TestWaitersShareSubscriptions parks 200 goroutines on 20 locks in one
// process: each channel has one subscription, each waiter acquires promptly
// after the release that frees it, and nothing is left subscribed after.
func TestWaitersShareSubscriptions(t *testing.T) {
	// A waiter no release woke would sleep for the holder's TTL (30s): a
	// second of maxHandoff covers the late wake-ups of a loaded machine
	// (latency, not safety).
	const (
		locks      = 20
		perLock    = 10
		maxHandoff = time.Second
	)
	c, rc := newClient(t)
	ctx := redistest.Context(t)
	holder := interlock.WithOwner(ctx, 1)

	names := make([]string, locks)
	channels := make([]string, locks)
	for i := range names {
		names[i] = lockName(t) + ":" + strconv.Itoa(i)
		channels[i] = keys.LockChannel(names[i])
		require.NoError(t, rlock.New(c, names[i]).Lock(holder))
	}

	type event struct{ acquired, released time.Time }
	var mu sync.Mutex
	events := make([][]event, locks)
	var wg sync.WaitGroup
	for i := range locks {
		for range perLock {
			wg.Go(func() {
				m := rlock.New(c, names[i])
				if !assert.NoError(t, m.Lock(ctx)) {
					return
				}
				acquired := time.Now()
				time.Sleep(2 * time.Millisecond)
				released := time.Now()
				assert.NoError(t, m.Unlock(ctx))
				mu.Lock()
				events[i] = append(events[i], event{acquired, released})
				mu.Unlock()
			})
		}
	}

	redistest.Eventually(t, 10*time.Second, func() bool {
		reply, err := rc.Do(ctx, rc.B().PubsubNumsub().Channel(channels...).Build()).ToArray()
		if err != nil || len(reply) != 2*locks {
			return false
		}
		for i := 1; i < len(reply); i += 2 {
			if n, err := reply[i].AsInt64(); err != nil || n != 1 {
				return false
			}
		}
		return true
	}, "every channel should have exactly one subscription")
	assert.Equal(t, locks, c.Stats().Channels)
	time.Sleep(200 * time.Millisecond) // let every waiter park

	start := make([]time.Time, locks)
	for i, n := range names {
		start[i] = time.Now()
		require.NoError(t, rlock.New(c, n).Unlock(holder))
	}
	wg.Wait()

	var handoffs []time.Duration
	for i := range locks {
		require.Len(t, events[i], perLock)
		slices.SortFunc(events[i], func(a, b event) int { return a.acquired.Compare(b.acquired) })
		prev := start[i]
		for _, e := range events[i] {
			handoffs = append(handoffs, e.acquired.Sub(prev))
			prev = e.released
		}
	}
	slices.Sort(handoffs)
	p := func(q float64) time.Duration { return handoffs[int(q*float64(len(handoffs)-1))] }
	t.Logf("%d hand-offs: p50 %v, p99 %v, max %v", len(handoffs), p(0.5), p(0.99), handoffs[len(handoffs)-1])
	assert.Less(t, handoffs[len(handoffs)-1], maxHandoff, "a waiter acquired late after the release that freed it")

	redistest.Eventually(t, 2*time.Second, func() bool {
		chans, err := rc.Do(ctx, rc.B().PubsubChannels().Pattern("*"+lockName(t)+"*").Build()).AsStrSlice()
		return err == nil && len(chans) == 0 && c.Stats().Channels == 0
	}, "subscriptions left behind")
}
