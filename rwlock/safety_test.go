package rwlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/rwlock"
)

// ackTimeout is the WAIT timeout of the safe-mode tests.
const ackTimeout = 200 * time.Millisecond

// lockHalf is what the tests need of a ReadLock or a WriteLock.
type lockHalf interface {
	Lock(ctx context.Context) error
	LockLease(ctx context.Context, lease time.Duration) error
	Unlock(ctx context.Context) error
	HoldCount(ctx context.Context) (int, error)
	Guard(ctx context.Context) context.Context
	Remaining(ctx context.Context) time.Duration
}

func halves(m *rwlock.Mutex) map[string]lockHalf {
	return map[string]lockHalf{"read": m.Read(), "write": m.Write()}
}

func TestSafeMode(t *testing.T) {
	master, replica := redistest.Replicated(t)
	rc := redistest.NewClient(t, master.Addr())
	c := wrap(t, rc, interlock.WithReplicaAcks(1, ackTimeout))
	ctx := testCtx(t)
	res := rc.DoMulti(ctx, rc.B().Set().Key("warm").Value("1").Build(), rc.B().Wait().Numreplicas(1).Timeout(10000).Build())
	require.NoError(t, res[1].Error())

	for name, h := range halves(rwlock.New(c, lockName(t))) {
		m := rwlock.New(c, lockName(t))
		// The lock hash or any reader timeout key.
		exists := func() bool {
			keys, err := rc.Do(ctx, rc.B().Keys().Pattern("*"+m.Name()+"*").Build()).AsStrSlice()
			require.NoError(t, err)
			return len(keys) > 0
		}
		require.NoError(t, h.Lock(ctx), name)
		require.NoError(t, h.Unlock(ctx), name)
		require.Eventually(t, func() bool { return !exists() }, 2*time.Second, 5*time.Millisecond, name)

		require.NoError(t, replica.Pause())
		start := time.Now()
		err := h.Lock(ctx)
		took := time.Since(start)
		require.ErrorIs(t, err, interlock.ErrReplication, name)
		assert.Less(t, took, ackTimeout+time.Second, "%s: Lock must fail, not retry", name)
		assert.False(t, exists(), "%s: keys left on the master", name)
		assert.Zero(t, c.Stats().Holds, name)

		// A re-entry is taken back; an unacknowledged unlock still releases.
		require.NoError(t, replica.Resume())
		require.NoError(t, h.Lock(ctx), name)
		require.NoError(t, replica.Pause())
		require.ErrorIs(t, h.Lock(ctx), interlock.ErrReplication, name)
		n, err := h.HoldCount(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, n, name)
		err = h.Unlock(ctx)
		require.ErrorIs(t, err, interlock.ErrReplication, name)
		assert.NotErrorIs(t, err, rwlock.ErrNotHeld, name)
		require.Eventually(t, func() bool { return !exists() }, 2*time.Second, 5*time.Millisecond, name)
		assert.Zero(t, c.Stats().Holds, name)
		require.NoError(t, replica.Resume())
	}
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
	for name, h := range halves(rwlock.New(c, lockName(t))) {
		start := time.Now()
		require.NoError(t, h.Lock(ctx), name)
		locked := time.Since(start)
		g := h.Guard(ctx)
		<-g.Done()
		at := time.Since(start)
		// MaxHold counts from when the acquire was sent, between start and
		// locked; the guard ends within 50ms of it.
		assert.GreaterOrEqual(t, at, maxHold)
		assert.LessOrEqual(t, at, maxHold+locked+50*time.Millisecond, "%s lost at %v", name, at)
		assert.ErrorIs(t, context.Cause(g), rwlock.ErrLockLost, name)
		assert.ErrorIs(t, context.Cause(g), interlock.ErrMaxHold, name)
		assert.Zero(t, h.Remaining(ctx), name)
		require.Eventually(t, func() bool {
			n, err := rc.Do(ctx, rc.B().Exists().Key(lockName(t)).Build()).AsInt64()
			return err == nil && n == 0
		}, maxHold+lease+200*time.Millisecond-time.Since(start), 5*time.Millisecond, "%s: key not gone", name)
		err := h.Unlock(ctx)
		assert.ErrorIs(t, err, rwlock.ErrLockLost, name)
		assert.ErrorIs(t, err, interlock.ErrMaxHold, name)
	}
}

func TestRemaining(t *testing.T) {
	const lease = 600 * time.Millisecond
	c, _ := newClient(t, interlock.WithWatchdogTimeout(lease))
	ctx := testCtx(t)
	for name, h := range halves(rwlock.New(c, lockName(t))) {
		assert.Zero(t, h.Remaining(ctx), name)
		require.NoError(t, h.Lock(ctx), name)
		low := lease
		for end := time.Now().Add(3 * lease); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
			low = min(low, h.Remaining(ctx))
		}
		assert.Greater(t, low, 2*lease/3-100*time.Millisecond, "%s: lowest %v", name, low)
		require.NoError(t, h.Unlock(ctx), name)
		assert.Zero(t, h.Remaining(ctx), name)

		require.NoError(t, h.LockLease(ctx, 400*time.Millisecond), name)
		first := h.Remaining(ctx)
		assert.Greater(t, first, 300*time.Millisecond, name)
		time.Sleep(100 * time.Millisecond)
		assert.Less(t, h.Remaining(ctx), first-90*time.Millisecond, name)
		time.Sleep(first)
		assert.Zero(t, h.Remaining(ctx), "%s: expired", name)
	}
}
