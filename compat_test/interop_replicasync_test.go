package compat_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/rlock"
)

// withPeerReplicas has the peer use Redisson's master/slave config, with
// the first address as the master and these replicas.
func withPeerReplicas(addrs ...string) peerOption {
	return func(c *peerConfig) { c.replicas = addrs }
}

// Replica-sync mode against Java's default on a master and one replica:
// Redisson (every version in peerVersions) with a master/slave config
// (checkLockSyncedSlaves: WAIT for every replica for up to 1s) and
// interlock with WithReplicaSync. Both exclude each other; with the
// replica frozen (SIGSTOP: still connected, acknowledging nothing) both
// take back the acquisition no replica confirmed and fail, leaving no key;
// once it runs again both lock.
func TestInteropReplicaSync(t *testing.T) {
	parallel(t)
	master, replica := redistest.Replicated(t)
	rc := redistest.NewClient(t, master.Addr())
	c := newLockClient(t, rc, interlock.WithReplicaSync(interlock.DefaultReplicaSyncTimeout))
	ctx := testCtx(t, 2*time.Minute)
	goA := interlock.WithOwner(ctx, 1)

	// One peer per version, each with a lock of its own, so that the slow
	// Java failures (Redisson reruns the attempt 4 times) overlap.
	type side struct {
		version, name string
		peer          *javaPeer
		m             *rlock.Mutex
	}
	var sides []side
	for _, v := range peerVersions {
		name := unique("interop-replicasync")
		sides = append(sides, side{v, name, startJavaPeer(t, v, []string{master.Addr()}, withPeerReplicas(replica.Addr())), rlock.New(c, name)})
	}
	goTry := func(s side) (bool, error) {
		return s.m.TryLock(goA, 0, 0)
	}
	javaTry := func(s side) bool {
		t.Helper()
		return s.peer.Do(t, javaReq(1, "tryLock", s.name)).Bool(t)
	}
	exclude := func(s side) {
		t.Helper()
		ok, err := goTry(s)
		require.NoError(t, err)
		require.True(t, ok, "%s: Go TryLock on a free lock", s.version)
		assert.False(t, javaTry(s), "%s: Java tryLock(0) while Go holds", s.version)
		require.NoError(t, s.m.Unlock(goA))
		require.True(t, javaTry(s), "%s: Java tryLock(0) on a free lock", s.version)
		ok, err = goTry(s)
		require.NoError(t, err)
		assert.False(t, ok, "%s: Go TryLock while Java holds", s.version)
		s.peer.Do(t, javaReq(1, "unlock", s.name)).Void(t)
		assert.False(t, keyExists(t, rc, s.name))
	}
	awaitReplica(t, rc)
	for _, s := range sides {
		exclude(s)
	}

	// The replica stays connected and acknowledges nothing.
	require.NoError(t, replica.Pause())
	t.Cleanup(func() { _ = replica.Resume() })
	for _, s := range sides {
		start := time.Now()
		ok, err := goTry(s)
		took := time.Since(start)
		t.Logf("Go TryLock, replica frozen: %v after %v", err, took.Round(time.Millisecond))
		require.ErrorIs(t, err, interlock.ErrReplication)
		assert.Contains(t, err.Error(), "0 of 1 replicas acknowledged within 1s")
		assert.False(t, ok)
		assert.GreaterOrEqual(t, took, time.Second)
		assertTakenBack(t, rc, s.name, "Go left the key")
	}
	replies := make([]<-chan peerReply, len(sides))
	for i, s := range sides {
		replies[i] = s.peer.Start(t, javaReq(1, "tryLock", s.name))
	}
	for i, s := range sides {
		var r peerReply
		select {
		case r = <-replies[i]:
		case <-time.After(peerDoTimeout):
			t.Fatalf("%s: no reply to tryLock within %v", s.version, peerDoTimeout)
		}
		t.Logf("Redisson %s tryLock(0), replica frozen: ok=%v err=%q after %v", s.version, r.OK, r.Err, r.Elapsed.Round(time.Millisecond))
		assert.False(t, r.OK, "%s: Java tryLock with no replica acknowledging", s.version)
		assert.Contains(t, r.Err, "NoSyncedSlavesException")
		assert.GreaterOrEqual(t, r.Elapsed, time.Second)
		assertTakenBack(t, rc, s.name, "%s: Java left the key", s.version)
	}

	require.NoError(t, replica.Resume())
	awaitReplica(t, rc)
	for _, s := range sides {
		exclude(s)
	}
}

// awaitReplica waits until the master's replica acknowledges a write.
func awaitReplica(t *testing.T, rc rueidis.Client) {
	t.Helper()
	ctx := testCtx(t, 15*time.Second)
	res := rc.DoMulti(ctx, rc.B().Set().Key(unique("warm")).Value("1").Px(time.Minute).Build(),
		rc.B().Wait().Numreplicas(1).Timeout(10000).Build())
	n, err := res[1].AsInt64()
	require.NoError(t, err)
	require.Equal(t, int64(1), n, "the replica does not acknowledge")
}

func keyExists(t *testing.T, rc rueidis.Client, key string) bool {
	t.Helper()
	n, err := rc.Do(context.Background(), rc.B().Exists().Key(key).Build()).AsInt64()
	require.NoError(t, err)
	return n == 1
}

// assertTakenBack asserts that a refused acquisition's key goes: an
// interlock Client waits for its take-back for a second and leaves it to
// its clean-up queue after that, which a loaded machine can take longer.
func assertTakenBack(t *testing.T, rc rueidis.Client, key, format string, args ...any) {
	t.Helper()
	assert.Eventually(t, func() bool {
		n, err := rc.Do(context.Background(), rc.B().Exists().Key(key).Build()).AsInt64()
		return err == nil && n == 0
	}, 2*time.Second+loadSlack, 5*time.Millisecond, append([]any{format}, args...)...)
}
