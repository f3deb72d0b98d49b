package interlock_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/latch"
	"github.com/interlock-go/interlock/rlock"
	"github.com/interlock-go/interlock/semaphore"
)

// TestSlotEnforcingEndpoint runs the Client on a server that enforces
// cluster slots behind one address, as managed services and proxies do
// (redistest.StartSlotted): rueidis runs it as a standalone server, and
// it refuses every command whose keys span slots. Twenty watchdog locks on
// twenty slots, and watchdog permits of expirable semaphores on three
// more, are held through three watchdog timeouts; a semaphore and a latch
// work meanwhile; one second after the unlocks nothing is left: no lock,
// unlock latch or receipt.
func TestSlotEnforcingEndpoint(t *testing.T) {
	const (
		watchdog = 2 * time.Second
		locks    = 20
	)
	srv := redistest.Slotted(t)
	rc := redistest.NewClient(t, srv.Addr())
	require.NotEqual(t, rueidis.ClientModeCluster, rc.Mode(), "the endpoint must look standalone")
	c, err := interlock.New(rc, interlock.WithWatchdogTimeout(watchdog))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	ctx := redistest.Context(t)

	names := distinctSlots("slotted-lock:", locks, nil)
	held := make([]interlock.Locker, locks)
	guards := make([]context.Context, locks)
	for i, name := range names {
		held[i] = rlock.New(c, name)
		require.NoError(t, held[i].Lock(ctx), name)
		guards[i] = held[i].Guard(ctx)
	}
	permits := distinctSlots("slotted-permits:", 3, names)
	sems := make([]*semaphore.Expirable, len(permits))
	ids := make([][]semaphore.PermitID, len(permits))
	for i, name := range permits {
		sems[i] = semaphore.NewExpirable(c, name)
		_, err := sems[i].TrySetPermits(ctx, 1)
		require.NoError(t, err)
		ids[i], err = sems[i].Acquire(ctx, 1, 0)
		require.NoError(t, err, name)
	}
	start := time.Now()

	// Meanwhile, a semaphore and a latch, each on a slot of its own.
	sem := semaphore.New(c, "slotted-semaphore")
	ok, err := sem.TrySetPermits(ctx, 2)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, sem.Acquire(ctx, 2))
	got, err := sem.TryAcquire(ctx, 1, 0)
	require.NoError(t, err)
	assert.False(t, got, "no permit is left")
	require.NoError(t, sem.Release(ctx, 2))
	n, err := sem.Available(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, 2, n)
	_, err = sem.Delete(ctx)
	require.NoError(t, err)

	l := latch.New(c, "slotted-latch")
	ok, err = l.TrySetCount(ctx, 2)
	require.NoError(t, err)
	require.True(t, ok)
	opened := make(chan error, 1)
	go func() { opened <- l.Await(ctx) }()
	require.NoError(t, l.CountDown(ctx))
	require.NoError(t, l.CountDown(ctx))
	select {
	case err := <-opened:
		require.NoError(t, err)
	case <-time.After(redistest.Prompt):
		t.Fatal("the latch did not open")
	}

	// Three watchdog timeouts: only renewals keep the keys.
	time.Sleep(3*watchdog - time.Since(start))
	for i, name := range names {
		require.NoError(t, context.Cause(guards[i]), "lock %s lost", name)
		ms := redistest.PTTL(t, rc, name)
		assert.Greater(t, ms, int64(0), name)
		assert.LessOrEqual(t, ms, watchdog.Milliseconds(), name)
	}
	for i, name := range permits {
		left, err := sems[i].LeaseLeft(ctx, ids[i][0])
		require.NoError(t, err, name)
		assert.Greater(t, left, time.Duration(0), name)
	}

	for i, name := range names {
		require.NoError(t, held[i].Unlock(ctx), name)
	}
	for i, name := range permits {
		require.NoError(t, sems[i].Release(ctx, ids[i]...), name)
		_, err := sems[i].Delete(ctx)
		require.NoError(t, err)
	}
	time.Sleep(time.Second)
	var left []string
	for cursor := uint64(0); ; {
		e, err := rc.Do(ctx, rc.B().Scan().Cursor(cursor).Count(1000).Build()).AsScanEntry()
		require.NoError(t, err)
		left = append(left, e.Elements...)
		if cursor = e.Cursor; cursor == 0 {
			break
		}
	}
	assert.Empty(t, left, "keys left 1s after the unlocks")
	size, err := rc.Do(ctx, rc.B().Dbsize().Build()).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, size, "DBSIZE")
}

// distinctSlots returns n names that start with prefix, each in a hash
// slot of its own and in none of the slots of taken.
func distinctSlots(prefix string, n int, taken []string) []string {
	used := map[uint16]bool{}
	for _, name := range taken {
		used[keys.Slot(name)] = true
	}
	var names []string
	for i := 0; len(names) < n; i++ {
		name := prefix + strconv.Itoa(i)
		if s := keys.Slot(name); !used[s] {
			used[s] = true
			names = append(names, name)
		}
	}
	return names
}
