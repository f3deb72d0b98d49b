package rwlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/rwlock"
)

// keepsAlive asserts, every 50ms for d, that every key has a TTL in
// (0, lease].
func keepsAlive(t *testing.T, rc rueidis.Client, d, lease time.Duration, keys ...string) {
	t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		for _, k := range keys {
			p := redistest.PTTL(t, rc, k)
			require.Greater(t, p, int64(0), "%s expired while held", k)
			require.LessOrEqual(t, p, lease.Milliseconds(), k)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestWatchdogKeepsReadAndWriteHolds: with a 1.5s watchdog, a writer that
// also reads twice, and a plain reader of another lock, stay alive for
// more than two leases, timeout keys included; after the writer's
// downgrade its read holds are still renewed. Renewals every 500ms leave
// each a second to spare for a loaded machine.
func TestWatchdogKeepsReadAndWriteHolds(t *testing.T) {
	if testing.Short() {
		t.Skip("holds locks for 5s")
	}
	const watchdog = 1500 * time.Millisecond
	c, rc := newClient(t, interlock.WithWatchdogTimeout(watchdog))
	ctx := redistest.Context(t)
	x := rwlock.New(c, lockName(t)+":x")
	y := rwlock.New(c, lockName(t)+":y")
	a, b := owner(ctx), owner(ctx)
	A, err := c.Owner(a)
	require.NoError(t, err)
	B, err := c.Owner(b)
	require.NoError(t, err)

	require.NoError(t, x.Write().Lock(a))
	require.NoError(t, x.Read().Lock(a))
	require.NoError(t, x.Read().Lock(a))
	require.NoError(t, y.Read().Lock(b))
	guards := []context.Context{x.Write().Guard(a), x.Read().Guard(a), y.Read().Guard(b)}
	xA := "{" + x.Name() + "}:" + A + ":rwlock_timeout:"
	yB := "{" + y.Name() + "}:" + B + ":rwlock_timeout:1"

	keepsAlive(t, rc, 2*watchdog+300*time.Millisecond, watchdog, x.Name(), xA+"1", xA+"2", y.Name(), yB)
	for _, g := range guards {
		require.NoError(t, g.Err())
	}

	// Downgrade: the read holds go on being renewed.
	require.NoError(t, x.Write().Unlock(a))
	assert.Equal(t, "read", hash(t, rc, x.Name())["mode"])
	keepsAlive(t, rc, 4*watchdog/3, watchdog, x.Name(), xA+"1", xA+"2", y.Name(), yB)
	require.NoError(t, guards[1].Err())

	require.NoError(t, x.Read().Unlock(a))
	require.NoError(t, x.Read().Unlock(a))
	require.NoError(t, y.Read().Unlock(b))
	redistest.Eventually(t, 2*time.Second, func() bool { return len(keysLike(t, rc, lockName(t))) == 0 }, "keys left behind")
	assert.Zero(t, c.Stats().Holds)
}

// TestDeletedLockLosesGuards: deleting the hash by hand ends every guard of
// every hold on it, read and write, within one renewal interval.
func TestDeletedLockLosesGuards(t *testing.T) {
	// Renewed every 667ms; the holds, just taken, would run out unrenewed
	// only 2s after their keys were deleted.
	const watchdog = 2 * time.Second
	c, rc := newClient(t, interlock.WithWatchdogTimeout(watchdog))
	ctx := redistest.Context(t)
	x := rwlock.New(c, lockName(t)+":x")
	y := rwlock.New(c, lockName(t)+":y")
	a, b := owner(ctx), owner(ctx)
	require.NoError(t, x.Write().Lock(a))
	require.NoError(t, x.Read().Lock(a))
	require.NoError(t, y.Read().Lock(b))
	guards := []context.Context{x.Write().Guard(a), x.Read().Guard(a), y.Read().Guard(b)}

	require.NoError(t, rc.Do(ctx, rc.B().Del().Key(x.Name(), y.Name()).Build()).Error())
	deleted := time.Now()
	for i, g := range guards {
		select {
		case <-g.Done():
		case <-time.After(5 * time.Second):
			t.Fatalf("guard %d not cancelled", i)
		}
		assert.ErrorIs(t, context.Cause(g), interlock.ErrLockLost)
	}
	took := time.Since(deleted)
	t.Logf("losses reported %v after the keys were deleted", took.Round(time.Millisecond))
	// One renewal interval, plus a second for the late wake-ups of a loaded
	// machine (latency, not safety): still before the validity would have
	// run out.
	assert.Less(t, took, watchdog/3+time.Second)
	assert.ErrorIs(t, x.Write().Unlock(a), interlock.ErrNotHeld)
	assert.ErrorIs(t, y.Read().Unlock(b), interlock.ErrNotHeld)
	assert.Zero(t, c.Stats().Holds)
}

// TestRenewalSparesOtherClientsReaders is Redisson's zombie-reader test: a
// client that read and died leaves its field in the hash. Another
// client's renewal keeps the hash but not the dead reader's timeout key
// (Redisson 4.4+), so when the live reader unlocks, the lock is deleted
// and a writer gets in.
func TestRenewalSparesOtherClientsReaders(t *testing.T) {
	// Renewals every 500ms, each with a second to spare for a loaded
	// machine.
	const watchdog = 1500 * time.Millisecond
	ctx := redistest.Context(t)
	dead, rc := newClient(t, interlock.WithWatchdogTimeout(watchdog))
	live, _ := newClient(t, interlock.WithWatchdogTimeout(watchdog))
	name := lockName(t)
	d, l := owner(ctx), owner(ctx)
	D, err := dead.Owner(d)
	require.NoError(t, err)
	L, err := live.Owner(l)
	require.NoError(t, err)

	require.NoError(t, rwlock.New(dead, name).Read().Lock(d))
	require.NoError(t, dead.Close()) // dies without unlocking
	rw := rwlock.New(live, name)
	require.NoError(t, rw.Read().Lock(l))
	deadKey := "{" + name + "}:" + D + ":rwlock_timeout:1"
	liveKey := "{" + name + "}:" + L + ":rwlock_timeout:1"

	redistest.Eventually(t, 3*watchdog, func() bool { return redistest.PTTL(t, rc, deadKey) == -2 }, "the dead reader's timeout key was renewed")
	assert.Greater(t, redistest.PTTL(t, rc, liveKey), int64(0))
	assert.Greater(t, redistest.PTTL(t, rc, name), int64(0))
	assert.Equal(t, map[string]string{"mode": "read", D: "1", L: "1"}, hash(t, rc, name), "the zombie field stays")

	require.NoError(t, rw.Read().Unlock(l))
	assert.Empty(t, hash(t, rc, name), "the last live reader's unlock deletes the lock")
	ok, err := rw.Write().TryLock(l, 0, 0)
	require.NoError(t, err)
	assert.True(t, ok)
	require.NoError(t, rw.Write().Unlock(l))
}
