package rlock_test

import (
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/rlock"
)

// TestSentinelClient runs a reentrant lock through a rueidis sentinel
// client: the watchdog renews it, other owners are excluded, a waiter's
// subscription reaches the master and Unlock wakes it, and nothing is left
// behind. It reads the lock's state from the master directly.
func TestSentinelClient(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a master, a replica and a sentinel, and holds a lock for two seconds")
	}
	// Renewals every 500ms, each with a second to spare for a loaded
	// machine. The waiter below waits for a holder with the default
	// watchdog timeout, whose PTTL (30s) it would sleep for if no message
	// woke it: maxWake leaves the hand-off seconds for late wake-ups
	// (latency, not safety).
	const (
		watchdog = 1500 * time.Millisecond
		held     = 4 * watchdog / 3 // four renewal intervals, past the lease
		maxWake  = 3 * time.Second
	)
	s := redistest.Sentinel(t)
	rc := s.Client(t)
	require.Equal(t, rueidis.ClientModeSentinel, rc.Mode())
	mc := s.Master().Client(t)
	c := wrap(t, rc, interlock.WithWatchdogTimeout(watchdog))
	ctx := redistest.Context(t)
	m := rlock.New(c, lockName(t))

	// Lock: a watchdog hold, written to the master.
	require.NoError(t, m.Lock(ctx))
	owner, err := c.Owner(ctx)
	require.NoError(t, err)
	fields, err := mc.Do(ctx, mc.B().Hgetall().Key(m.Name()).Build()).AsStrMap()
	require.NoError(t, err)
	assert.Equal(t, map[string]string{owner: "1"}, fields)

	// The watchdog keeps it past its lease.
	end := time.Now().Add(held)
	for time.Now().Before(end) {
		pttl, err := mc.Do(ctx, mc.B().Pttl().Key(m.Name()).Build()).AsInt64()
		require.NoError(t, err)
		require.Greater(t, pttl, int64(0), "the lock expired while held")
		require.LessOrEqual(t, pttl, watchdog.Milliseconds())
		time.Sleep(50 * time.Millisecond)
	}

	// Another owner is excluded.
	other := interlock.WithOwner(ctx, interlock.NewOwnerID())
	ok, err := m.TryLock(other, 0, 0)
	require.NoError(t, err)
	assert.False(t, ok, "another owner acquired a held lock")

	// A waiter blocked in Lock subscribes on the master, through the
	// sentinel client, and Unlock's release message wakes it. The lock
	// passes to the long holder first.
	long := rlock.New(wrap(t, rc), m.Name())
	require.NoError(t, m.Unlock(ctx))
	require.NoError(t, long.Lock(ctx))
	type result struct {
		at  time.Time
		err error
	}
	acquired := make(chan result, 1)
	go func() {
		err := m.Lock(other) // returns when the test ends, if it fails first
		acquired <- result{time.Now(), err}
	}()
	channel := keys.LockChannel(m.Name())
	redistest.Eventually(t, 5*time.Second, func() bool {
		n, err := mc.Do(ctx, mc.B().PubsubNumsub().Channel(channel).Build()).AsIntMap()
		return err == nil && n[channel] == 1 && c.Stats().Channels == 1
	}, "the waiter's subscription did not reach the master")
	time.Sleep(50 * time.Millisecond) // let the waiter park after its second try
	unlocked := time.Now()
	require.NoError(t, long.Unlock(ctx))
	select {
	case r := <-acquired:
		require.NoError(t, r.err)
		wake := r.at.Sub(unlocked)
		t.Logf("waiter woken %v after the unlock", wake.Round(time.Microsecond))
		assert.Less(t, wake, maxWake)
	case <-time.After(5 * time.Second):
		t.Fatal("waiter not woken")
	}
	fields, err = mc.Do(ctx, mc.B().Hgetall().Key(m.Name()).Build()).AsStrMap()
	require.NoError(t, err)
	otherOwner, err := c.Owner(other)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{otherOwner: "1"}, fields, "the waiter holds the lock")
	require.NoError(t, m.Unlock(other))

	// Nothing is left: no key (the unlock latches go in the background), no
	// subscription, no hold to renew.
	redistest.Eventually(t, 2*time.Second, func() bool {
		left, err := mc.Do(ctx, mc.B().Keys().Pattern("*"+m.Name()+"*").Build()).AsStrSlice()
		return err == nil && len(left) == 0
	}, "keys left behind after unlock")
	redistest.Eventually(t, 2*time.Second, func() bool {
		chans, err := mc.Do(ctx, mc.B().PubsubChannels().Pattern("*"+m.Name()+"*").Build()).AsStrSlice()
		return err == nil && len(chans) == 0 && c.Stats().Channels == 0
	}, "subscriptions left behind")
	assert.Zero(t, c.Stats().Holds)
	locked, err := m.IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked)
}
