package fairlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/internal/redistest"
)

// ackTimeout is the WAIT timeout of the safe-mode tests.
const ackTimeout = 200 * time.Millisecond

func TestSafeMode(t *testing.T) {
	master, replica := redistest.Replicated(t)
	rc := redistest.NewClient(t, master.Addr())
	c := wrap(t, rc, interlock.WithReplicaAcks(1, ackTimeout))
	ctx := testCtx(t)
	m := fairlock.New(c, lockName(t))
	// The lock, its queue or its deadline set.
	exists := func() bool {
		n, err := rc.Do(ctx, rc.B().Exists().Key(m.Name(), "redisson_lock_queue:{"+m.Name()+"}",
			"redisson_lock_timeout:{"+m.Name()+"}").Build()).AsInt64()
		require.NoError(t, err)
		return n > 0
	}

	// The replica acknowledges: nothing changes. (Wait until it does; its
	// first acknowledgements after the initial sync can be slow.)
	res := rc.DoMulti(ctx, rc.B().Set().Key(m.Name()+":warm").Value("1").Build(), rc.B().Wait().Numreplicas(1).Timeout(10000).Build())
	require.NoError(t, res[1].Error())
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Unlock(ctx))
	require.NoError(t, m.Unlock(ctx))
	assert.False(t, exists())

	// The replica is frozen: a fresh acquisition is taken back and fails,
	// after about the timeout, with nothing left behind.
	require.NoError(t, replica.Pause())
	t.Cleanup(func() { _ = replica.Resume() })
	start := time.Now()
	err := m.Lock(ctx)
	took := time.Since(start)
	require.ErrorIs(t, err, interlock.ErrReplication)
	assert.Contains(t, err.Error(), "0 of 1 replicas")
	assert.GreaterOrEqual(t, took, ackTimeout)
	assert.Less(t, took, ackTimeout+time.Second, "Lock must fail, not retry")
	assert.False(t, exists(), "key left on the master")
	assert.Zero(t, c.Stats().Holds, "renewal entry left")
	ok, err := m.TryLock(ctx, 0, time.Minute)
	require.ErrorIs(t, err, interlock.ErrReplication)
	assert.False(t, ok)
	assert.False(t, exists())

	// A re-entry is taken back to the count before it.
	require.NoError(t, replica.Resume())
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, replica.Pause())
	require.ErrorIs(t, m.Lock(ctx), interlock.ErrReplication)
	n, err := m.HoldCount(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)

	// An unlock the replica did not acknowledge still releases.
	err = m.Unlock(ctx)
	require.ErrorIs(t, err, interlock.ErrReplication)
	assert.NotErrorIs(t, err, fairlock.ErrNotHeld)
	assert.False(t, exists())
	assert.Zero(t, c.Stats().Holds)
	assert.ErrorIs(t, m.Unlock(ctx), fairlock.ErrNotHeld)
}

func TestMaxHold(t *testing.T) {
	// A watchdog timeout of 600ms rather than 300ms: renewals every 200ms
	// survive the scheduling delays of a loaded 2-core machine.
	const (
		lease   = 600 * time.Millisecond
		maxHold = time.Second
	)
	c, rc := newClient(t, interlock.WithWatchdogTimeout(lease), interlock.WithMaxHold(maxHold))
	ctx := testCtx(t)
	m := fairlock.New(c, lockName(t))

	start := time.Now()
	require.NoError(t, m.Lock(ctx))
	locked := time.Since(start)
	g := m.Guard(ctx)
	<-g.Done()
	at := time.Since(start)
	// MaxHold counts from when the acquire was sent, between start and
	// locked; the guard ends within 50ms of it.
	assert.GreaterOrEqual(t, at, maxHold)
	assert.LessOrEqual(t, at, maxHold+locked+50*time.Millisecond, "lost at %v", at)
	assert.ErrorIs(t, context.Cause(g), fairlock.ErrLockLost)
	assert.ErrorIs(t, context.Cause(g), interlock.ErrMaxHold)
	assert.Zero(t, m.Remaining(ctx))
	require.Eventually(t, func() bool {
		n, err := rc.Do(ctx, rc.B().Exists().Key(m.Name()).Build()).AsInt64()
		return err == nil && n == 0
	}, maxHold+lease+200*time.Millisecond-time.Since(start), 5*time.Millisecond, "key not gone")
	err := m.Unlock(ctx)
	assert.ErrorIs(t, err, fairlock.ErrLockLost)
	assert.ErrorIs(t, err, interlock.ErrMaxHold)

	// Unlocked before the key ran out, the hold is released normally.
	require.NoError(t, m.Lock(ctx))
	g = m.Guard(ctx)
	<-g.Done()
	require.NoError(t, m.Unlock(ctx))
	isLocked, err := m.IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, isLocked)
}

func TestRemaining(t *testing.T) {
	const lease = 600 * time.Millisecond
	c, _ := newClient(t, interlock.WithWatchdogTimeout(lease))
	ctx := testCtx(t)
	m := fairlock.New(c, lockName(t))
	assert.Zero(t, m.Remaining(ctx), "not held")

	// A watchdog hold stays above 2/3 of the lease across renewals (less
	// the slack of a loaded machine).
	require.NoError(t, m.Lock(ctx))
	low := lease
	for end := time.Now().Add(3 * lease); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		low = min(low, m.Remaining(ctx))
	}
	assert.Greater(t, low, 2*lease/3-100*time.Millisecond, "lowest %v", low)
	other := interlock.WithOwner(ctx, interlock.NewOwnerID())
	assert.Zero(t, m.Remaining(other), "another owner holds nothing")
	require.NoError(t, m.Unlock(ctx))
	assert.Zero(t, m.Remaining(ctx), "released")

	// A fixed lease counts down.
	require.NoError(t, m.LockLease(ctx, 400*time.Millisecond))
	first := m.Remaining(ctx)
	assert.LessOrEqual(t, first, 400*time.Millisecond)
	assert.Greater(t, first, 300*time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	assert.Less(t, m.Remaining(ctx), first-90*time.Millisecond)
	require.NoError(t, m.Unlock(ctx))

	// A lost hold has none left.
	require.NoError(t, m.Lock(ctx))
	_, err := m.ForceUnlock(ctx)
	require.NoError(t, err)
	assert.Zero(t, m.Remaining(ctx))
}
