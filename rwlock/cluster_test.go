package rwlock_test

import (
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/runtime"
	"github.com/interlock-go/interlock/rwlock"
)

// TestCluster runs the read/write lock on a three-master Redis 7 cluster,
// where Redisson's default is sharded pub/sub: Redisson's testInCluster
// (write, read, unlock read, unlock write), a reader woken by a write
// release and a writer woken by a read release (SPUBLISH), watchdog
// renewal of read and write holds over several slots, and every key of a
// lock (hash, timeout keys, channel, latch) in the lock's slot.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	// Renewals every 500ms, each with a second to spare for a loaded
	// machine. The wake-ups below have the default watchdog timeout
	// (30s), which a waiter no message woke would sleep for.
	const watchdog = 1500 * time.Millisecond
	cl := redistest.Cluster(t)
	rc := cl.Client(t)
	require.Equal(t, rueidis.ClientModeCluster, rc.Mode())
	c := wrap(t, rc)
	ctx := redistest.Context(t)
	sharded, err := runtime.Of(c).Sharded(ctx)
	require.NoError(t, err)
	require.Equal(t, redistest.FeaturesOf(t, rc).ShardedPubSub(), sharded, "Redisson's default: sharded pub/sub on a Redis 7 cluster, classic on Redis 6")

	base := lockName(t)
	names := []string{base + ":a", base + ":b", base + ":c", "{" + base + "}:tagged"}
	for _, name := range names {
		rw := rwlock.New(c, name)
		a := owner(ctx)
		A, err := c.Owner(a)
		require.NoError(t, err)
		slot := keys.Slot(name)
		timeout := keys.Suffix(name, A+":rwlock_timeout:1")
		for _, k := range []string{timeout, keys.Prefix("redisson_rwlock", name), keys.UnlockLatch(name, keys.RequestID())} {
			require.Equal(t, slot, keys.Slot(k), "slot of %s", k)
		}

		// testInCluster.
		require.NoError(t, rw.Write().Lock(a))
		require.NoError(t, rw.Read().Lock(a))
		n, err := rc.Do(ctx, rc.B().Exists().Key(timeout).Build()).AsInt64()
		require.NoError(t, err)
		assert.EqualValues(t, 1, n, "the timeout key is on the lock's node")
		require.NoError(t, rw.Read().Unlock(a))
		require.NoError(t, rw.Write().Unlock(a))
		assert.False(t, redistest.Must[bool](t)(rw.Read().IsLocked(ctx)))

		// A reader waits for a writer, a writer for a reader.
		require.NoError(t, rw.Write().Lock(a))
		woke := make(chan time.Time, 1)
		b := owner(ctx)
		go func() {
			assert.NoError(t, rw.Read().Lock(b))
			woke <- time.Now()
		}()
		redistest.Eventually(t, 5*time.Second, func() bool { return c.Stats().Channels == 1 }, "reader not waiting")
		time.Sleep(50 * time.Millisecond)
		released := time.Now()
		require.NoError(t, rw.Write().Unlock(a))
		select {
		case at := <-woke:
			// Not the 30s TTL; three seconds for the late wake-ups of a
			// loaded machine (latency, not safety).
			assert.Less(t, at.Sub(released), 3*time.Second, "woken by the SPUBLISHed write release")
		case <-time.After(5 * time.Second):
			t.Fatal("reader not woken")
		}
		go func() {
			assert.NoError(t, rw.Write().Lock(a))
			woke <- time.Now()
		}()
		redistest.Eventually(t, 5*time.Second, func() bool { return c.Stats().Channels == 1 }, "writer not waiting")
		time.Sleep(50 * time.Millisecond)
		released = time.Now()
		require.NoError(t, rw.Read().Unlock(b))
		select {
		case at := <-woke:
			assert.Less(t, at.Sub(released), 3*time.Second, "woken by the SPUBLISHed read release")
		case <-time.After(5 * time.Second):
			t.Fatal("writer not woken")
		}
		require.NoError(t, rw.Write().Unlock(a))
	}

	// Renewal over several slots: write holds and read holds in one tick.
	type hold struct {
		rw    *rwlock.Mutex
		write bool
	}
	var holds []hold
	o := owner(ctx)
	renewed := wrap(t, rc, interlock.WithWatchdogTimeout(watchdog))
	for i, name := range names {
		rw := rwlock.New(renewed, name)
		if i%2 == 0 {
			require.NoError(t, rw.Write().Lock(o))
		} else {
			require.NoError(t, rw.Read().Lock(o))
		}
		holds = append(holds, hold{rw, i%2 == 0})
	}
	end := time.Now().Add(4 * watchdog / 3) // past the lease
	for time.Now().Before(end) {
		for _, name := range names {
			p, err := rc.Do(ctx, rc.B().Pttl().Key(name).Build()).AsInt64()
			require.NoError(t, err)
			require.Greater(t, p, int64(0), "%s expired while held", name)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, h := range holds {
		if h.write {
			require.NoError(t, h.rw.Write().Unlock(o))
		} else {
			require.NoError(t, h.rw.Read().Unlock(o))
		}
	}

	// Nothing is left on any node.
	redistest.Eventually(t, 2*time.Second, func() bool {
		for _, n := range cl.Nodes() {
			nc := n.Client(t)
			ks, err := nc.Do(ctx, nc.B().Keys().Pattern("*"+base+"*").Build()).AsStrSlice()
			if err != nil || len(ks) > 0 {
				return false
			}
		}
		return true
	}, "keys left behind")
	assert.Zero(t, c.Stats().Holds)
	assert.Zero(t, renewed.Stats().Holds)
}
