package renewal_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/renewal"
)

var errMaxHold = errors.New("test: max hold")

func TestMaxHoldEndsWatchdogHold(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	// A renewal every 500ms, one before MaxHold; the lease alone outlasts
	// MaxHold, so a late renewal on a loaded machine cannot end the hold
	// first.
	const (
		lease   = 1500 * time.Millisecond
		maxHold = 800 * time.Millisecond
	)
	var lost atomic.Int64
	s := newScheduler(t, rc, renewal.Config{
		Lease: lease, BatchSize: 100, MaxHold: maxHold, MaxHoldErr: errMaxHold,
		Observer: observer{lost: &lost},
	})
	key := "renew:maxhold:" + t.Name()
	hold(t, rc, key, "me:1", lease)
	acquired := time.Now()
	require.NoError(t, s.Hold(key, "me:1", task, 0, acquired))
	e := renewal.LookupEntry(s, key, "me:1")
	g := guard(t, s, key, "me:1")

	<-g.Done()
	at := time.Since(acquired)
	// Never before the deadline; after it, within a second: the timer and
	// this goroutine both wake late on a loaded machine (latency, not
	// safety; the cause below says it was MaxHold).
	assert.GreaterOrEqual(t, at, maxHold, "guard cancelled at %v", at)
	assert.LessOrEqual(t, at, maxHold+time.Second, "guard cancelled at %v", at)
	assert.ErrorIs(t, context.Cause(g), errLost)
	assert.ErrorIs(t, context.Cause(g), errMaxHold)
	assert.Zero(t, renewal.EntryRemaining(e))
	assert.Zero(t, s.Remaining(key, "me:1"))
	assert.Zero(t, s.Len())
	reportedOnce(t, &lost)

	// Renewal stopped: the key runs out within one lease. The second on
	// top is latency: the last renewal, sent before MaxHold, may reach a
	// loaded server late; renewals that went on would keep the key.
	require.Eventually(t, func() bool { return pttl(t, rc, key) == -2 },
		maxHold+lease+time.Second-time.Since(acquired), 5*time.Millisecond, "key still there")

	// The owner's late unlocks learn why, until it acquires again.
	assert.ErrorIs(t, s.LostCause(key, "me:1"), errMaxHold)
	assert.ErrorIs(t, s.LostCause(key, "me:1"), errMaxHold)
	require.NoError(t, s.Hold(key, "me:1", task, time.Second, time.Now()))
	assert.NoError(t, s.LostCause(key, "me:1"))
}

func TestMaxHoldIsPerEntryAndDropsReleased(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	// MaxHold leaves the loop seconds to take and release its holds,
	// however slowly a loaded machine runs it (beside a CPU hog it took
	// more than 1.5 s); the lease is valid past MaxHold, however far back
	// a hold was sent.
	const lease = 4 * time.Second
	s := newScheduler(t, rc, renewal.Config{Lease: lease, BatchSize: 100, MaxHold: 3 * time.Second})
	now := time.Now()
	var guards []context.Context
	for i := range 50 {
		key := fmt.Sprintf("renew:maxhold:many:%d:%s", i, t.Name())
		hold(t, rc, key, "me:1", lease)
		// Deadlines out of order: the earliest must still fire first.
		require.NoError(t, s.Hold(key, "me:1", task, 0, now.Add(-time.Duration(i%7)*50*time.Millisecond)))
		guards = append(guards, guard(t, s, key, "me:1"))
		if i%10 == 0 {
			// Released entries leave the deadline heap.
			_, held, end := s.Release(key, "me:1")
			require.True(t, held)
			end(renewal.Released)
		}
	}
	// A re-entry does not extend the deadline.
	key := fmt.Sprintf("renew:maxhold:many:1:%s", t.Name())
	require.Equal(t, 1, s.Holds(key, "me:1"))
	require.NoError(t, s.Hold(key, "me:1", task, 0, time.Now()))
	require.Equal(t, 2, s.Holds(key, "me:1"))

	// Lease-only entries have no max hold.
	leaseKey := "renew:maxhold:lease:" + t.Name()
	hold(t, rc, leaseKey, "me:1", 10*time.Second)
	require.NoError(t, s.Hold(leaseKey, "me:1", task, 10*time.Second, time.Now()))

	for i, g := range guards {
		select {
		case <-g.Done():
		case <-time.After(8 * time.Second):
			t.Fatalf("guard %d not cancelled", i)
		}
		if i%10 == 0 {
			assert.ErrorIs(t, context.Cause(g), context.Canceled, "released %d", i)
		} else {
			assert.ErrorIs(t, context.Cause(g), renewal.ErrMaxHold, "guard %d", i)
		}
	}
	assert.Equal(t, 1, s.Len(), "only the lease hold is left")
	assert.Positive(t, s.Remaining(leaseKey, "me:1"))
}

func TestRemainingFollowsRenewals(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	const lease = 1500 * time.Millisecond
	s := newScheduler(t, rc, renewal.Config{Lease: lease, BatchSize: 100})
	key := "renew:remaining:" + t.Name()
	hold(t, rc, key, "me:1", lease)
	require.NoError(t, s.Hold(key, "me:1", task, 0, time.Now()))
	// Across several renewals, past the lease, the hold never runs out: a
	// renewal every lease/3 keeps it above 2/3 of the lease (1s), less the
	// scheduling slack of a loaded machine, where a tick can come 600ms
	// late (latency, not safety: the floor is a fifth of the lease).
	end := time.Now().Add(4 * lease / 3)
	low := lease
	for time.Now().Before(end) {
		low = min(low, s.Remaining(key, "me:1"))
		time.Sleep(5 * time.Millisecond)
	}
	assert.Greater(t, low, lease/5, "lowest remaining %v", low)
	assert.LessOrEqual(t, s.Remaining(key, "me:1"), lease)

	require.NoError(t, rc.Do(context.Background(), rc.B().Del().Key(key).Build()).Error())
	require.Eventually(t, func() bool { return s.Remaining(key, "me:1") == 0 }, 2*lease, 5*time.Millisecond)
}
