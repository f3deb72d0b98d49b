package compat_test

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
	"github.com/interlock-go/interlock/internal/runtime"
	"github.com/interlock-go/interlock/rlock"
)

// Live interop of the reentrant lock with a real Redisson (every version in
// peerVersions), on the shared standalone server and on the shared cluster,
// with each side's default pub/sub choice (sharded on the cluster). Go
// owners are explicit (interlock.WithOwner); Java owners are the peer's
// logical threads.

const (
	// basicWakeBound is how soon a waiter must be woken by the other side's
	// release. Both sides use a 30s watchdog in those scenarios, so a
	// waiter that missed the message would sleep for up to 30s: this is
	// wakeBound, seconds above a loaded machine's late wake-ups and far
	// below that.
	basicWakeBound = wakeBound
	// basicSubscribeWait bounds how long a waiter may take to subscribe.
	basicSubscribeWait = 20 * time.Second
	// basicWatchdog is the watchdog timeout of the keep-out scenarios:
	// short, so that three of them pass quickly, yet renewed (every third
	// of it) often enough that a loaded machine's late wake-ups never let
	// a hold expire. At 2 s, a CI run that loaded both cores with the
	// package tests beside the matrix stalled a JVM's renewals and a Go
	// Client's in the same second long enough for both holds to expire.
	basicWatchdog = 4 * time.Second
)

func TestInteropBasic(t *testing.T) {
	t.Parallel()
	for _, v := range peerVersions {
		t.Run("redisson-"+v, func(t *testing.T) {
			t.Parallel()
			t.Run("standalone", func(t *testing.T) {
				parallel(t)
				testInteropBasic(t, v, nil)
			})
			t.Run("cluster", func(t *testing.T) {
				parallel(t)
				testInteropBasic(t, v, sharedCluster(t))
			})
		})
	}
}

// basicEnv is one Redis deployment with a Go Client and a Java peer on it.
type basicEnv struct {
	version string
	addrs   []string
	cluster *redistest.ClusterServers // nil: the shared standalone server
	rc      rueidis.Client
	c       *interlock.Client // 30s watchdog, pub/sub auto
	peer    *javaPeer         // 30s watchdog, Redisson defaults
}

func testInteropBasic(t *testing.T, version string, cluster *redistest.ClusterServers) {
	e := &basicEnv{version: version, addrs: []string{standaloneAddr}, cluster: cluster}
	if cluster != nil {
		e.addrs = cluster.Addrs()
	}
	e.rc = redistest.NewClient(t, e.addrs...)
	e.c = newLockClient(t, e.rc)
	e.peer = startJavaPeer(t, version, e.addrs)

	sharded, err := runtime.Of(e.c).Sharded(testCtx(t, 10*time.Second))
	require.NoError(t, err)
	want := cluster != nil && redistest.FeaturesOf(t, e.rc).ShardedPubSub()
	require.Equal(t, want, sharded, "the Go client's pub/sub choice (sharded on a Redis 7 cluster)")

	t.Run("ExcludeBothWays", e.testExclude)
	t.Run("JavaHoldSeenFromGo", e.testJavaHoldSeenFromGo)
	t.Run("GoUnlockWakesJava", e.testGoUnlockWakesJava)
	t.Run("JavaUnlockWakesGo", e.testJavaUnlockWakesGo)
	t.Run("ReentryWhileOtherWaits", e.testReentry)
	t.Run("ForceUnlockWakesOtherSide", e.testForceUnlock)
	t.Run("WatchdogKeepsOtherSideOut", e.testWatchdogKeepsOut)
}

// javaReq returns a request for the reentrant lock name on Java thread thread.
func javaReq(thread int, op, name string) peerReq {
	return peerReq{Thread: thread, Op: op, Kind: "reentrant", Name: name}
}

// mustDo runs req on the peer and fails t unless it succeeded.
func (e *basicEnv) mustDo(t *testing.T, p *javaPeer, req peerReq) peerReply {
	t.Helper()
	r := p.Do(t, req)
	require.Truef(t, r.OK, "Java %s on thread %d: %s", req.Op, req.Thread, r.Err)
	return r
}

// node returns a connection to the node that serves key.
func (e *basicEnv) node(t *testing.T, key string) *conn {
	t.Helper()
	if e.cluster == nil {
		return dial(t, standaloneAddr)
	}
	return dial(t, e.cluster.NodeForKey(key).Addr())
}

// waitSubscribers waits until the lock's channel has at least n
// subscribers: classic ones on the standalone server, sharded ones on the
// cluster node of the lock's slot (so on the cluster this also checks that
// the waiter chose sharded pub/sub), classic ones on every node of a
// cluster without sharded pub/sub (Redis 6).
func (e *basicEnv) waitSubscribers(t *testing.T, name string, n int64) {
	t.Helper()
	channel := keys.Prefix("redisson_lock__channel", name)
	conns := []*conn{e.node(t, channel)}
	sub := "NUMSUB"
	switch {
	case e.cluster != nil && redistest.FeaturesOf(t, e.rc).ShardedPubSub():
		sub = "SHARDNUMSUB"
	case e.cluster != nil:
		// Classic pub/sub on a Redis 6 cluster: a subscriber may be
		// connected to any node.
		conns = conns[:0]
		for _, addr := range e.addrs {
			conns = append(conns, dial(t, addr))
		}
	}
	deadline := time.Now().Add(basicSubscribeWait)
	for {
		var got int64
		for _, c := range conns {
			reply, ok := c.do("PUBSUB", sub, channel).([]any)
			require.Truef(t, ok && len(reply) == 2, "PUBSUB %s: %#v", sub, reply)
			k, _ := reply[1].(int64)
			got += k
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s has %d %s subscribers after %v, want %d", channel, got, sub, basicSubscribeWait, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// hash returns the lock hash name.
func (e *basicEnv) hash(t *testing.T, name string) map[string]string {
	t.Helper()
	m, err := e.rc.Do(testCtx(t, 10*time.Second), e.rc.B().Hgetall().Key(name).Build()).AsStrMap()
	require.NoError(t, err)
	return m
}

// goLocked is the outcome of a Lock started in a goroutine.
type goLocked struct {
	err error
	at  time.Time
}

// goLockAsync starts m.Lock(ctx) in a goroutine. Receive from the channel
// before the test ends; ctx ends with the test at the latest.
func goLockAsync(ctx context.Context, m *rlock.Mutex) <-chan goLocked {
	ch := make(chan goLocked, 1)
	go func() {
		err := m.Lock(ctx)
		ch <- goLocked{err: err, at: time.Now()}
	}()
	return ch
}

// basicNotYet checks that ch has not delivered within d.
func basicNotYet[T any](t *testing.T, ch <-chan T, d time.Duration, what string) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("%s too early: %+v", what, v)
	case <-time.After(d):
	}
}

// javaWoken waits for a blocked Java lock call and returns how long after
// released it came back.
func javaWoken(t *testing.T, ch <-chan peerReply, released time.Time, what string) time.Duration {
	t.Helper()
	select {
	case r := <-ch:
		d := time.Since(released)
		require.Truef(t, r.OK, "%s: %s", what, r.Err)
		return d
	case <-time.After(peerDoTimeout):
		t.Fatalf("%s: still blocked after %v", what, peerDoTimeout)
		return 0
	}
}

// goWoken waits for a Lock started with goLockAsync and returns how long
// after released it acquired.
func goWoken(t *testing.T, ch <-chan goLocked, released time.Time, what string) time.Duration {
	t.Helper()
	select {
	case r := <-ch:
		require.NoErrorf(t, r.err, "%s", what)
		return r.at.Sub(released)
	case <-time.After(peerDoTimeout):
		t.Fatalf("%s: still blocked after %v", what, peerDoTimeout)
		return 0
	}
}

func (e *basicEnv) logWake(t *testing.T, direction string, d time.Duration) {
	t.Helper()
	topology := "standalone"
	if e.cluster != nil {
		topology = "cluster"
	}
	t.Logf("wake latency, Redisson %s, %s, %s: %v", e.version, topology, direction, d.Round(10*time.Microsecond))
	assert.LessOrEqualf(t, d, basicWakeBound, "%s: waiter woken after %v; only pub/sub can wake it this soon", direction, d)
}

// Go holds → Java's tryLock() fails; Java holds → Go's TryLock fails; each
// gets the lock once the other releases.
func (e *basicEnv) testExclude(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	name := unique("interop-excl")
	m := rlock.New(e.c, name)
	goA := interlock.WithOwner(ctx, 1)

	require.NoError(t, m.Lock(goA))
	assert.False(t, e.peer.Do(t, javaReq(1, "tryLockNoWait", name)).Bool(t), "Java tryLock() while Go holds")
	assert.True(t, e.peer.Do(t, javaReq(1, "isLocked", name)).Bool(t))
	assert.False(t, e.peer.Do(t, javaReq(1, "isHeldByThread", name)).Bool(t))
	assert.Equal(t, int64(0), e.peer.Do(t, javaReq(1, "holdCount", name)).Int(t))
	ttl := e.peer.Do(t, javaReq(1, "remainTimeToLive", name)).Int(t)
	assert.True(t, ttl > 0 && ttl <= 30000, "Java sees the Go hold's TTL %d ms, want (0, 30000]", ttl)
	r := e.peer.Do(t, javaReq(1, "unlock", name))
	assert.False(t, r.OK, "Java unlock of a Go hold succeeded")
	assert.Contains(t, r.Err, "IllegalMonitorStateException")
	require.NoError(t, m.Unlock(goA))

	assert.True(t, e.peer.Do(t, javaReq(1, "tryLockNoWait", name)).Bool(t), "Java tryLock() after Go released")
	ok, err := m.TryLock(goA, 0, 0)
	require.NoError(t, err)
	assert.False(t, ok, "Go TryLock while Java holds")
	err = m.Unlock(goA)
	assert.ErrorIs(t, err, interlock.ErrNotHeld, "Go Unlock of a Java hold")
	e.mustDo(t, e.peer, javaReq(1, "unlock", name))

	ok, err = m.TryLock(goA, 0, 0)
	require.NoError(t, err)
	assert.True(t, ok, "Go TryLock after Java released")
	require.NoError(t, m.Unlock(goA))
	locked, err := m.IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked)
}

// A Java hold, seen from Go: locked, TTL in (0, 30s], the hash field is
// "<Redisson id>:<Java thread id>" with hold count 1, and not held by any Go
// owner.
func (e *basicEnv) testJavaHoldSeenFromGo(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	name := unique("interop-seen")
	m := rlock.New(e.c, name)
	goA := interlock.WithOwner(ctx, 1)

	r := e.mustDo(t, e.peer, javaReq(1, "lock", name))
	owner := e.peer.Owner(t, 1)
	require.Equal(t, strconv.FormatInt(r.ThreadID, 10), owner[len(e.peer.ClientID())+1:])
	require.Regexp(t, ownerRE, owner)

	locked, err := m.IsLocked(ctx)
	require.NoError(t, err)
	assert.True(t, locked, "IsLocked on a Java hold")
	ttl, err := m.TTL(ctx)
	require.NoError(t, err)
	assert.True(t, ttl > 0 && ttl <= 30*time.Second, "TTL of a Java watchdog hold %v, want (0, 30s]", ttl)
	assert.Equal(t, map[string]string{owner: "1"}, e.hash(t, name), "the lock hash Java wrote")
	held, err := m.IsHeld(goA)
	require.NoError(t, err)
	assert.False(t, held)
	n, err := m.HoldCount(goA)
	require.NoError(t, err)
	assert.Zero(t, n)

	e.mustDo(t, e.peer, javaReq(1, "unlock", name))
	assert.Empty(t, e.hash(t, name))
}

// Java blocked in lock() while Go holds is woken by Go's Unlock.
func (e *basicEnv) testGoUnlockWakesJava(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	name := unique("interop-wake-java")
	m := rlock.New(e.c, name)
	goA := interlock.WithOwner(ctx, 1)

	require.NoError(t, m.Lock(goA))
	waiting := e.peer.Start(t, javaReq(1, "lock", name))
	e.waitSubscribers(t, name, 1)
	basicNotYet(t, waiting, 50*time.Millisecond, "Java lock() while Go holds")

	released := time.Now()
	require.NoError(t, m.Unlock(goA))
	e.logWake(t, "Go Unlock -> Java lock()", javaWoken(t, waiting, released, "Java lock()"))

	assert.Equal(t, map[string]string{e.peer.Owner(t, 1): "1"}, e.hash(t, name))
	e.mustDo(t, e.peer, javaReq(1, "unlock", name))
}

// Go blocked in Lock while Java holds is woken by Java's unlock().
func (e *basicEnv) testJavaUnlockWakesGo(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	name := unique("interop-wake-go")
	m := rlock.New(e.c, name)
	goB := interlock.WithOwner(ctx, 2)

	e.mustDo(t, e.peer, javaReq(1, "lock", name))
	waiting := goLockAsync(goB, m)
	e.waitSubscribers(t, name, 1)
	basicNotYet(t, waiting, 50*time.Millisecond, "Go Lock while Java holds")

	released := time.Now()
	e.mustDo(t, e.peer, javaReq(1, "unlock", name))
	e.logWake(t, "Java unlock() -> Go Lock", goWoken(t, waiting, released, "Go Lock"))

	owner, err := e.c.Owner(goB)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{owner: "1"}, e.hash(t, name))
	require.NoError(t, m.Unlock(goB))
}

// Reentry on either side while the other waits: a partial release wakes
// no one, the last one does.
func (e *basicEnv) testReentry(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	t.Run("GoReentersJavaWaits", func(t *testing.T) {
		name := unique("interop-reenter-go")
		m := rlock.New(e.c, name)
		goA := interlock.WithOwner(ctx, 1)
		owner, err := e.c.Owner(goA)
		require.NoError(t, err)

		require.NoError(t, m.Lock(goA))
		waiting := e.peer.Start(t, javaReq(1, "lock", name))
		e.waitSubscribers(t, name, 1)
		require.NoError(t, m.Lock(goA))
		n, err := m.HoldCount(goA)
		require.NoError(t, err)
		assert.Equal(t, 2, n)
		assert.Equal(t, map[string]string{owner: "2"}, e.hash(t, name))

		require.NoError(t, m.Unlock(goA))
		basicNotYet(t, waiting, 300*time.Millisecond, "Java lock() after Go's partial unlock")
		assert.Equal(t, map[string]string{owner: "1"}, e.hash(t, name))

		released := time.Now()
		require.NoError(t, m.Unlock(goA))
		e.logWake(t, "Go last Unlock of a reentrant hold -> Java lock()", javaWoken(t, waiting, released, "Java lock()"))
		assert.Equal(t, int64(1), e.peer.Do(t, javaReq(1, "holdCount", name)).Int(t))
		e.mustDo(t, e.peer, javaReq(1, "unlock", name))
	})
	t.Run("JavaReentersGoWaits", func(t *testing.T) {
		name := unique("interop-reenter-java")
		m := rlock.New(e.c, name)
		goB := interlock.WithOwner(ctx, 2)

		e.mustDo(t, e.peer, javaReq(1, "lock", name))
		waiting := goLockAsync(goB, m)
		e.waitSubscribers(t, name, 1)
		e.mustDo(t, e.peer, javaReq(1, "lock", name))
		assert.Equal(t, int64(2), e.peer.Do(t, javaReq(1, "holdCount", name)).Int(t))
		assert.Equal(t, map[string]string{e.peer.Owner(t, 1): "2"}, e.hash(t, name))

		e.mustDo(t, e.peer, javaReq(1, "unlock", name))
		basicNotYet(t, waiting, 300*time.Millisecond, "Go Lock after Java's partial unlock")

		released := time.Now()
		e.mustDo(t, e.peer, javaReq(1, "unlock", name))
		e.logWake(t, "Java last unlock() of a reentrant hold -> Go Lock", goWoken(t, waiting, released, "Go Lock"))
		require.NoError(t, m.Unlock(goB))
	})
}

// forceUnlock from one side deletes the other side's hold and wakes the
// other side's waiter.
func (e *basicEnv) testForceUnlock(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	t.Run("GoForcesJavaWakes", func(t *testing.T) {
		name := unique("interop-force-go")
		m := rlock.New(e.c, name)

		e.mustDo(t, e.peer, javaReq(1, "lock", name))
		waiting := e.peer.Start(t, javaReq(2, "lock", name))
		e.waitSubscribers(t, name, 1)
		basicNotYet(t, waiting, 50*time.Millisecond, "Java lock() on thread 2 while thread 1 holds")

		released := time.Now()
		ok, err := m.ForceUnlock(ctx)
		require.NoError(t, err)
		assert.True(t, ok, "Go ForceUnlock of a Java hold")
		e.logWake(t, "Go ForceUnlock -> Java lock()", javaWoken(t, waiting, released, "Java lock() on thread 2"))

		assert.Equal(t, map[string]string{e.peer.Owner(t, 2): "1"}, e.hash(t, name))
		assert.False(t, e.peer.Do(t, javaReq(1, "isHeldByThread", name)).Bool(t), "thread 1 after the force")
		e.mustDo(t, e.peer, javaReq(2, "unlock", name))
	})
	t.Run("JavaForcesGoWakes", func(t *testing.T) {
		name := unique("interop-force-java")
		m := rlock.New(e.c, name)
		goA, goB := interlock.WithOwner(ctx, 1), interlock.WithOwner(ctx, 2)

		require.NoError(t, m.Lock(goA))
		waiting := goLockAsync(goB, m)
		e.waitSubscribers(t, name, 1)
		basicNotYet(t, waiting, 50*time.Millisecond, "Go Lock of owner 2 while owner 1 holds")

		released := time.Now()
		assert.True(t, e.peer.Do(t, javaReq(1, "forceUnlock", name)).Bool(t), "Java forceUnlock of a Go hold")
		e.logWake(t, "Java forceUnlock() -> Go Lock", goWoken(t, waiting, released, "Go Lock of owner 2"))

		ownerB, err := e.c.Owner(goB)
		require.NoError(t, err)
		assert.Equal(t, map[string]string{ownerB: "1"}, e.hash(t, name))
		held, err := m.IsHeld(goA)
		require.NoError(t, err)
		assert.False(t, held, "owner 1 after the force")
		require.NoError(t, m.Unlock(goB))
	})
}

// With a 2s watchdog on both sides, a watchdog hold outlives three watchdog
// timeouts: the other side's bounded wait gives up, and the TTL never
// exceeds the 2s lease.
func (e *basicEnv) testWatchdogKeepsOut(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	c1 := newLockClient(t, e.rc, interlock.WithWatchdogTimeout(basicWatchdog))
	p1 := startJavaPeer(t, e.version, e.addrs, withPeerWatchdog(basicWatchdog))
	keepOut := 3 * basicWatchdog
	javaName, goName := unique("interop-wd-java"), unique("interop-wd-go")
	mJava, mGo := rlock.New(c1, javaName), rlock.New(c1, goName)
	goA, goB := interlock.WithOwner(ctx, 1), interlock.WithOwner(ctx, 2)

	// Java holds javaName, Go holds goName; each side then waits three
	// watchdog timeouts for the other's lock, both at once.
	e.mustDo(t, p1, javaReq(1, "lock", javaName))
	require.NoError(t, mGo.Lock(goA))
	for _, n := range []string{javaName, goName} {
		ttl, err := rlock.New(c1, n).TTL(ctx)
		require.NoError(t, err)
		require.True(t, ttl > 0 && ttl <= basicWatchdog, "%s: TTL %v, want (0, %v]", n, ttl, basicWatchdog)
	}

	javaTry := p1.Start(t, peerReq{Thread: 2, Op: "tryLock", Kind: "reentrant", Name: goName, Wait: keepOut})
	type tried struct {
		ok   bool
		err  error
		took time.Duration
	}
	goTry := make(chan tried, 1)
	go func() {
		start := time.Now()
		ok, err := mJava.TryLock(goB, keepOut, 0)
		goTry <- tried{ok, err, time.Since(start)}
	}()

	// Sample the TTLs while both wait: never above the watchdog lease.
	deadline := time.Now().Add(keepOut - 300*time.Millisecond)
	for time.Now().Before(deadline) {
		for _, n := range []string{javaName, goName} {
			ttl, err := rlock.New(c1, n).TTL(ctx)
			require.NoError(t, err)
			require.True(t, ttl > 0 && ttl <= basicWatchdog, "%s: TTL %v during the wait, want (0, %v]", n, ttl, basicWatchdog)
		}
		time.Sleep(100 * time.Millisecond)
	}

	gt := <-goTry
	require.NoError(t, gt.err)
	assert.False(t, gt.ok, "Go TryLock(%v) against Java's %v-watchdog hold acquired it", keepOut, basicWatchdog)
	assert.GreaterOrEqual(t, gt.took, keepOut-50*time.Millisecond)
	t.Logf("Go TryLock gave up after %v", gt.took.Round(time.Millisecond))
	var jt peerReply
	select {
	case jt = <-javaTry:
	case <-time.After(peerDoTimeout):
		t.Fatalf("Java tryLock(%v) still blocked after %v", keepOut, peerDoTimeout)
	}
	assert.False(t, jt.Bool(t), "Java tryLock(%v) against Go's %v-watchdog hold acquired it", keepOut, basicWatchdog)
	assert.GreaterOrEqual(t, jt.Elapsed, keepOut-50*time.Millisecond)
	t.Logf("Java tryLock gave up after %v", jt.Elapsed.Round(time.Millisecond))

	// Both holds are still there, still the original owners'.
	assert.Equal(t, map[string]string{p1.Owner(t, 1): "1"}, e.hash(t, javaName))
	ownerA, err := c1.Owner(goA)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{ownerA: "1"}, e.hash(t, goName))

	e.mustDo(t, p1, javaReq(1, "unlock", javaName))
	require.NoError(t, mGo.Unlock(goA))
	assert.Empty(t, e.hash(t, javaName))
	assert.Empty(t, e.hash(t, goName))
}
