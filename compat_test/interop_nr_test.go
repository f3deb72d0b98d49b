package compat_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/nonreentrant"
	"github.com/interlock-go/interlock/rlock"
)

// Live interop of the non-reentrant locks (reference/
// redisson-synchronizers.md §6) with Redisson 4.7.0's getNonReentrantLock
// and getNonReentrantFairLock: exclusion and wake-ups in both directions,
// against the same kind and against the reentrant kind whose keys it
// shares, and the refused re-entry on each side. Redisson 3.52.0 has no
// such locks; its peer must say so.
//
// Run only these with
//
//	go test -count=1 -run 'TestInteropNonReentrant' ./compat_test/

var (
	sideNR = lockSide{
		kind:    "nonReentrant",
		goLock:  func(c *interlock.Client, n string) goLocker { return nonreentrant.New(c, n) },
		field:   func(o string) string { return o },
		channel: func(n, _ string) string { return keys.LockChannel(n) },
	}
	sideReentrant = lockSide{
		kind:    "reentrant",
		goLock:  func(c *interlock.Client, n string) goLocker { return rlock.New(c, n) },
		field:   func(o string) string { return o },
		channel: func(n, _ string) string { return keys.LockChannel(n) },
	}
	sideNRFair = lockSide{
		kind:    "nonReentrantFair",
		goLock:  func(c *interlock.Client, n string) goLocker { return nonreentrant.NewFair(c, n) },
		field:   func(o string) string { return o },
		channel: func(n, o string) string { return keys.LockChannel(n) + ":" + o },
	}
)

// nrPairs are the (Go side, Java side) combinations that must exclude each
// other: each non-reentrant kind against itself and against its reentrant
// twin, both ways.
var nrPairs = []struct {
	label    string
	goSide   lockSide
	javaSide lockSide
}{
	{"nr", sideNR, sideNR},
	{"goRLock-javaNR", sideReentrant, sideNR},
	{"goNR-javaRLock", sideNR, sideReentrant},
	{"nrFair", sideNRFair, sideNRFair},
	{"goFair-javaNRFair", sideFair, sideNRFair},
	{"goNRFair-javaFair", sideNRFair, sideFair},
}

func TestInteropNonReentrant(t *testing.T) {
	t.Parallel()
	for _, version := range peerVersions {
		if !strings.HasPrefix(version, "4.") {
			t.Run(version, func(t *testing.T) {
				parallel(t)
				interopNRMissing(t, version)
			})
			continue
		}
		for _, topology := range []string{"standalone", "cluster"} {
			t.Run(version+"/"+topology, func(t *testing.T) {
				parallel(t)
				e := newInteropEnv(t, version, topology)
				for _, kp := range nrPairs {
					t.Run("exclusion/"+kp.label, func(t *testing.T) { interopExclusion(t, e, kp.goSide, kp.javaSide) })
					t.Run("wakeJava/"+kp.label, func(t *testing.T) { interopWakeJava(t, e, kp.goSide, kp.javaSide) })
					t.Run("wakeGo/"+kp.label, func(t *testing.T) { interopWakeGo(t, e, kp.goSide, kp.javaSide) })
				}
				for _, fair := range []bool{false, true} {
					label := map[bool]string{false: "nr", true: "nrFair"}[fair]
					t.Run("javaReentry/"+label, func(t *testing.T) { interopNRJavaReentry(t, e, fair) })
					t.Run("goReentry/"+label, func(t *testing.T) { interopNRGoReentry(t, e, fair) })
				}
			})
		}
	}
}

// interopNRMissing: a peer older than 4.4.0 refuses both kinds clearly;
// nothing else can run against it.
func interopNRMissing(t *testing.T, version string) {
	p := startJavaPeer(t, version, []string{standaloneAddr})
	for _, kind := range []string{"nonReentrant", "nonReentrantFair"} {
		name := unique("interop-nr-missing")
		r := p.Do(t, peerReq{Thread: 1, Op: "tryLockNoWait", Kind: kind, Name: name})
		require.False(t, r.OK, "%s on Redisson %s", kind, version)
		assert.Contains(t, r.Err, "UnsupportedOperationException")
		assert.Contains(t, r.Err, "needs Redisson 4.4.0 or later")
		assert.Zero(t, dial(t, standaloneAddr).int("EXISTS", name))
	}
	t.Skipf("Redisson %s has no non-reentrant locks (4.4.0 and later): its peer refuses them, nothing else to run", version)
}

// nrReentryWait is the wait of the timed re-entries: a refusal that came
// only after waiting would take at least that long, while a refusal at
// once takes a round trip, however loaded the machine.
const nrReentryWait = 5 * time.Second

// nrKind returns the peer kind and the Go constructor of one of the two
// non-reentrant kinds.
func nrKind(fair bool) lockSide {
	if fair {
		return sideNRFair
	}
	return sideNR
}

// nrQueueEmpty checks that a fair lock's queue and deadlines are empty.
func nrQueueEmpty(t *testing.T, n *nodes, name, label string) {
	t.Helper()
	assert.Empty(t, n.queue(name), "%s: queue", label)
	assert.Empty(t, n.deadlines(name), "%s: deadlines", label)
}

// interopNRJavaReentry: a Java thread that holds the lock gets
// IllegalMonitorStateException from lock(), tryLock() and tryLock(wait),
// at once, and its hold is unchanged (for the fair kind, it is not
// queued). A Go owner still cannot take it.
func interopNRJavaReentry(t *testing.T, e *interopEnv, fair bool) {
	side := nrKind(fair)
	name := unique("interop-nr-jreenter")
	n := e.nodes(t)
	th := e.threads(1)[0]
	jOwner := e.p.Owner(t, th)

	e.javaLock(t, th, side.kind, name)
	for _, req := range []peerReq{
		{Thread: th, Op: "lock", Kind: side.kind, Name: name},
		{Thread: th, Op: "tryLockNoWait", Kind: side.kind, Name: name},
		{Thread: th, Op: "tryLock", Kind: side.kind, Name: name, Wait: nrReentryWait},
	} {
		start := time.Now()
		r := e.p.Do(t, req)
		took := time.Since(start)
		require.False(t, r.OK, "Java %s again by the holder", req.Op)
		t.Logf("%s: Java %s %s again by the holder: %s", e.label, side.kind, req.Op, r.Err)
		assert.Contains(t, r.Err, "IllegalMonitorStateException", "Java %s again by the holder", req.Op)
		assert.Less(t, took, nrReentryWait, "Java %s again: refused at once, not after a wait", req.Op)
		assert.Equal(t, map[string]string{side.field(jOwner): "1"}, n.of(name).hash(name), "after Java %s again", req.Op)
		if fair {
			nrQueueEmpty(t, n, name, "after Java "+req.Op+" again")
		}
	}
	assert.True(t, e.java(t, peerReq{Thread: th, Op: "isHeldByThread", Kind: side.kind, Name: name}).Bool(t))

	ctx, _ := e.goOwner(t)
	g := side.goLock(e.c, name)
	ok, err := g.TryLock(ctx, 0, 0)
	require.NoError(t, err)
	assert.False(t, ok, "Go TryLock(0) while Java holds")

	e.javaUnlock(t, th, side.kind, name)
	assert.Zero(t, n.of(name).int("EXISTS", name), "one unlock releases the lock")
	if fair {
		nrQueueEmpty(t, n, name, "after the unlock")
	}
}

// interopNRGoReentry: a Go owner that holds the lock gets ErrReentered
// from Lock and TryLock, at once, with its hold unchanged (for the fair
// kind, unqueued); Java cannot take the lock meanwhile.
func interopNRGoReentry(t *testing.T, e *interopEnv, fair bool) {
	side := nrKind(fair)
	name := unique("interop-nr-greenter")
	n := e.nodes(t)
	th := e.threads(1)[0]
	ctx, gOwner := e.goOwner(t)
	var g interlock.Locker = nonreentrant.New(e.c, name)
	if fair {
		g = nonreentrant.NewFair(e.c, name)
	}

	require.NoError(t, g.Lock(ctx))
	for _, try := range []struct {
		label string
		fn    func() error
	}{
		{"Lock", func() error { return g.Lock(ctx) }},
		{"TryLock(0)", func() error { _, err := g.TryLock(ctx, 0, 0); return err }},
		{"TryLock(5s)", func() error { _, err := g.TryLock(ctx, nrReentryWait, 0); return err }},
	} {
		start := time.Now()
		err := try.fn()
		took := time.Since(start)
		assert.True(t, errors.Is(err, nonreentrant.ErrReentered), "Go %s again by the holder: %v", try.label, err)
		assert.Less(t, took, nrReentryWait, "Go %s again: refused at once", try.label)
		assert.Equal(t, map[string]string{gOwner: "1"}, n.of(name).hash(name), "after Go %s again", try.label)
		if fair {
			nrQueueEmpty(t, n, name, "after Go "+try.label+" again")
		}
	}
	held, err := g.HoldCount(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, held)
	assert.False(t, e.javaTry(t, th, side.kind, name), "Java tryLock() while Go holds")

	require.NoError(t, g.Unlock(ctx))
	assert.Zero(t, n.of(name).int("EXISTS", name), "one unlock releases the lock")
	assert.True(t, e.javaTry(t, th, side.kind, name), "Java tryLock() once Go released")
	e.javaUnlock(t, th, side.kind, name)
}
