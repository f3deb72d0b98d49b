package compat_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/fenced"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/rlock"
	"github.com/interlock-go/interlock/rwlock"
	"github.com/interlock-go/interlock/spin"
)

// Live interop of Extend with a real Redisson (every version in
// peerVersions), on the shared standalone server and on the shared
// cluster: a Go lease hold extended before its lease ends keeps Java out
// past that lease, until the new one ends, and the key's TTL as Java reads
// it is the new lease; an Extend after that fails with ErrNotHeld and
// leaves Java's own hold alone. Redisson has no public extend: what Java
// must see is only the key's TTL and the hash field, as its renewal leaves
// them.

const (
	// extendFirst is the Go hold's first lease; extendLease the one it is
	// extended to, long enough for a few Java tries on a loaded machine.
	extendFirst = 300 * time.Millisecond
	extendLease = 1200 * time.Millisecond
)

// extendKind is a Go lock kind, and the Java lock that it keeps out.
type extendKind struct {
	name   string
	goLock func(c *interlock.Client, name string) interlock.Locker
	java   string // the peer's kind of the Java lock that must wait
}

var extendKinds = []extendKind{
	{"reentrant", func(c *interlock.Client, n string) interlock.Locker { return rlock.New(c, n) }, "reentrant"},
	{"fair", func(c *interlock.Client, n string) interlock.Locker { return fairlock.New(c, n) }, "fair"},
	{"fenced", func(c *interlock.Client, n string) interlock.Locker { return fenced.New(c, n) }, "fenced"},
	{"spin", func(c *interlock.Client, n string) interlock.Locker { return spin.New(c, n) }, "spin"},
	{"write", func(c *interlock.Client, n string) interlock.Locker { return rwlock.New(c, n).Write() }, "write"},
	{"read", func(c *interlock.Client, n string) interlock.Locker { return rwlock.New(c, n).Read() }, "write"},
}

func TestInteropExtend(t *testing.T) {
	t.Parallel()
	for _, v := range peerVersions {
		t.Run("redisson-"+v, func(t *testing.T) {
			t.Parallel()
			t.Run("standalone", func(t *testing.T) {
				parallel(t)
				testInteropExtend(t, v, []string{standaloneAddr})
			})
			t.Run("cluster", func(t *testing.T) {
				parallel(t)
				testInteropExtend(t, v, sharedCluster(t).Addrs())
			})
		})
	}
}

func testInteropExtend(t *testing.T, version string, addrs []string) {
	c := newLockClient(t, redistest.NewClient(t, addrs...))
	peer := startJavaPeer(t, version, addrs)
	for i, k := range extendKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel() // one JVM, a Java thread each: the kinds wait side by side
			testExtendKeepsJavaOut(t, c, peer, k, i+1)
		})
	}
}

func testExtendKeepsJavaOut(t *testing.T, c *interlock.Client, peer *javaPeer, k extendKind, thread int) {
	ctx := testCtx(t, time.Minute)
	name := unique("interop-extend-" + k.name)
	m := k.goLock(c, name)
	goA := interlock.WithOwner(ctx, 1)
	java := func(op string) peerReq { return peerReq{Thread: thread, Op: op, Kind: k.java, Name: name} }

	require.NoError(t, m.LockLease(goA, extendFirst))
	sent := time.Now()
	require.NoError(t, m.Extend(goA, extendLease))
	// The key's TTL, as Java reads it: the new lease, less the time since
	// the Extend was sent (PTTL counts whole milliseconds).
	ttl := time.Duration(peer.Do(t, java("remainTimeToLive")).Int(t)) * time.Millisecond
	assert.LessOrEqual(t, ttl, extendLease, "Java's remainTimeToLive")
	assert.GreaterOrEqual(t, ttl, extendLease-time.Since(sent)-time.Millisecond, "Java's remainTimeToLive")

	// Java's tryLock(0) fails throughout, past the first lease. A Java
	// acquisition is wrong only if its reply came back before the new
	// lease could have ended: the server's expiry is at least a lease after
	// the Extend was sent.
	tries := 0
	for {
		ok := peer.Do(t, peerReq{Thread: thread, Op: "tryLock", Kind: k.java, Name: name}).Bool(t)
		answered := time.Since(sent)
		if ok {
			require.GreaterOrEqual(t, answered, extendLease,
				"Java's tryLock(0) acquired %v after the Extend, within the extended lease", answered)
			break
		}
		tries++
		if answered > extendLease+loadSlack {
			t.Fatalf("Java's tryLock(0) still failed %v after the Extend", answered)
		}
		time.Sleep(50 * time.Millisecond)
	}
	assert.Greater(t, tries, 0, "no Java try within the extended lease")
	t.Logf("Redisson %s, %s: %d Java tries failed within the extended lease", peer.Version(), k.name, tries)

	// Java holds it now: an Extend of the Go hold that ran out fails, and
	// leaves Java's hold and its TTL alone.
	before := peer.Do(t, java("remainTimeToLive")).Int(t)
	err := m.Extend(goA, time.Minute)
	assert.ErrorIs(t, err, interlock.ErrNotHeld)
	assert.True(t, peer.Do(t, java("isHeldByThread")).Bool(t), "Java's hold after Go's late Extend")
	assert.LessOrEqual(t, peer.Do(t, java("remainTimeToLive")).Int(t), before, "Go's late Extend moved Java's TTL")
	r := peer.Do(t, java("unlock"))
	require.True(t, r.OK, "Java unlock: %s", r.Err)
	assert.ErrorIs(t, m.Extend(goA, time.Minute), interlock.ErrNotHeld)
}
