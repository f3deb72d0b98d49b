package compat_test

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/rlock"
	"github.com/interlock-go/interlock/spin"
)

// Live interop of the spin lock (package spin) with Redisson's
// getSpinLock, for every peer version, standalone and on the shared
// cluster: exclusion between the spin lock and both sides' RLock, and the
// hand-off latency of every mixed pairing of spin and RLock waiters, which
// is measured and logged. A spin waiter polls (Redisson's exponential
// backoff, at most 128ms between attempts), so it must get in within one
// pause of the release; an RLock waiter is woken by RLock's release message,
// which Go's spin unlock publishes and Java's does not.
//
// Run only these with
//
//	go test -count=1 -run 'TestInteropSpin' ./compat_test/

const (
	// spinPollBound is how soon a polling waiter must hold the lock once
	// it was released: the longest pause (128ms) plus room for a loaded
	// two-core machine and the peer's reply.
	spinPollBound = 128*time.Millisecond + loadSlack
	// spinSettle lets a polling waiter reach its longest pause before the
	// release, so that the measured latency is that of a steady waiter.
	spinSettle = 400 * time.Millisecond
	// spinRounds is how many hand-offs each polling pairing measures.
	spinRounds = 3
	// spinShortLease is the Java spin holder's lease in the pairing where
	// nothing but that lease can let a Go RLock waiter in.
	spinShortLease = 2 * time.Second
	// spinRLockPoll is the Go RLock waiter's poll interval
	// (rlock.WithPollInterval) in the pairing that shows the remedy.
	spinRLockPoll = 100 * time.Millisecond
)

var sideSpin = lockSide{
	kind:    "spin",
	goLock:  func(c *interlock.Client, n string) goLocker { return spin.New(c, n) },
	field:   func(o string) string { return o },
	channel: func(n, _ string) string { return keys.LockChannel(n) },
}

func TestInteropSpin(t *testing.T) {
	t.Parallel()
	for _, version := range peerVersions {
		for _, topology := range []string{"standalone", "cluster"} {
			t.Run(version+"/"+topology, func(t *testing.T) {
				parallel(t)
				e := newInteropEnv(t, version, topology)
				t.Run("exclusion/javaSpinHolds", func(t *testing.T) { interopSpinJavaHolds(t, e) })
				t.Run("exclusion/goSpinHolds", func(t *testing.T) { interopSpinGoHolds(t, e) })
				t.Run("releaseMessages", func(t *testing.T) { interopSpinMessages(t, e) })
				t.Run("wake/goSpin-javaRLock", func(t *testing.T) { interopSpinGoToJava(t, e, sideReentrant, false) })
				t.Run("wake/goSpin-javaSpin", func(t *testing.T) { interopSpinGoToJava(t, e, sideSpin, true) })
				t.Run("wake/javaSpin-goSpin", func(t *testing.T) { interopSpinJavaToGoSpin(t, e, sideSpin) })
				t.Run("wake/javaRLock-goSpin", func(t *testing.T) { interopSpinJavaToGoSpin(t, e, sideReentrant) })
				t.Run("wake/javaSpin-goRLock", func(t *testing.T) { interopSpinJavaToGoRLock(t, e, 0) })
				t.Run("wake/javaSpin-goRLockPolling", func(t *testing.T) { interopSpinJavaToGoRLock(t, e, spinRLockPoll) })
			})
		}
	}
}

// interopSpinJavaHolds: while a Java spin lock holds, neither a Go spin
// lock nor a Go RLock of that name gets in; once it is released, both do.
func interopSpinJavaHolds(t *testing.T, e *interopEnv) {
	name := unique("interop-spin-jholds")
	n := e.nodes(t)
	th := e.threads(1)[0]
	jOwner := e.p.Owner(t, th)
	ctx, _ := e.goOwner(t)
	gs := spin.New(e.c, name)
	gr := rlock.New(e.c, name)

	require.True(t, e.javaTry(t, th, "spin", name), "Java spin tryLock() on a free lock")
	assert.Equal(t, map[string]string{jOwner: "1"}, n.of(name).hash(name), "Java spin's hold in RLock's hash")
	for _, g := range []struct {
		label string
		l     goLocker
	}{{"spin", gs}, {"rlock", gr}} {
		ok, err := g.l.TryLock(ctx, 0, 0)
		require.NoError(t, err)
		assert.False(t, ok, "Go %s TryLock(0) while Java spin holds", g.label)
		start := time.Now()
		ok, err = g.l.TryLock(ctx, 150*time.Millisecond, 0)
		took := time.Since(start)
		require.NoError(t, err)
		assert.False(t, ok, "Go %s TryLock(150ms) while Java spin holds", g.label)
		assert.GreaterOrEqual(t, took, 140*time.Millisecond, "Go %s TryLock gave up before its wait", g.label)
		if g.label == "spin" {
			assert.Less(t, took, 150*time.Millisecond+spinPollBound, "Go spin TryLock overran its wait")
		}
	}
	e.javaUnlock(t, th, "spin", name)
	assert.Zero(t, n.of(name).int("EXISTS", name), "Java spin unlock left the hash")

	for _, g := range []goLocker{gs, gr} {
		ok, err := g.TryLock(ctx, 0, 0)
		require.NoError(t, err)
		assert.True(t, ok, "Go TryLock(0) once Java spin released")
		require.NoError(t, g.Unlock(ctx))
	}
	assert.Zero(t, n.of(name).int("EXISTS", name), "lock left behind")
}

// interopSpinGoHolds: while a Go spin lock holds, neither a Java spin lock
// nor a Java RLock of that name gets in; once it is released, both do.
func interopSpinGoHolds(t *testing.T, e *interopEnv) {
	name := unique("interop-spin-gholds")
	n := e.nodes(t)
	th := e.threads(1)[0]
	ctx, gOwner := e.goOwner(t)
	g := spin.New(e.c, name)

	require.NoError(t, g.Lock(ctx))
	assert.Equal(t, map[string]string{gOwner: "1"}, n.of(name).hash(name), "Go spin's hold in RLock's hash")
	if pttl := n.of(name).int("PTTL", name); pttl < 20000 || pttl > 30000 {
		t.Errorf("PTTL %dms of a Go spin hold, want the 30s watchdog lease", pttl)
	}
	for _, kind := range []string{"spin", "reentrant"} {
		assert.False(t, e.javaTry(t, th, kind, name), "Java %s tryLock() while Go spin holds", kind)
		start := time.Now()
		assert.False(t, e.javaTryWait(t, th, kind, name, 150*time.Millisecond), "Java %s tryLock(150ms) while Go spin holds", kind)
		assert.GreaterOrEqual(t, time.Since(start), 140*time.Millisecond, "Java %s tryLock gave up before its wait", kind)
		assert.True(t, e.java(t, peerReq{Thread: th, Op: "isLocked", Kind: kind, Name: name}).Bool(t), "Java %s isLocked while Go spin holds", kind)
	}
	require.NoError(t, g.Unlock(ctx))
	assert.Zero(t, n.of(name).int("EXISTS", name), "Go spin unlock left the hash")

	for _, kind := range []string{"spin", "reentrant"} {
		assert.True(t, e.javaTry(t, th, kind, name), "Java %s tryLock() once Go spin released", kind)
		e.javaUnlock(t, th, kind, name)
	}
	assert.Zero(t, n.of(name).int("EXISTS", name), "lock left behind")
}

// latencies collects the measured hand-offs of one pairing.
type latencies []time.Duration

func (l latencies) String() string {
	if len(l) == 0 {
		return "none"
	}
	s := slices.Clone(l)
	slices.Sort(s)
	r := func(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
	return "min " + r(s[0]).String() + ", max " + r(s[len(s)-1]).String() + " over " + strconv.Itoa(len(s))
}

// noSubscribers checks that nobody listens on the lock's channel (a spin
// waiter must poll, not subscribe).
func noSubscribers(t *testing.T, n *nodes, name, who string) {
	t.Helper()
	classic, sharded := n.subscribers(keys.LockChannel(name))
	assert.Zero(t, classic+sharded, "%s: subscribers of %s (classic %d, sharded %d)", who, keys.LockChannel(name), classic, sharded)
}

// interopSpinGoToJava: a Java waiter in lock() (an RLock, or a spin lock)
// gets the lock once a Go spin lock releases it. The RLock waiter is woken
// by the "0" that Go's spin unlock publishes; the spin waiter, which does
// not listen, by its next poll.
func interopSpinGoToJava(t *testing.T, e *interopEnv, javaSide lockSide, polls bool) {
	var took latencies
	for range spinRounds {
		name := unique("interop-spin-g2j-" + javaSide.kind)
		n := e.nodes(t)
		th := e.threads(1)[0]
		jOwner := e.p.Owner(t, th)
		ctx, _ := e.goOwner(t)
		g := spin.New(e.c, name)

		require.NoError(t, g.Lock(ctx))
		ch := e.javaStart(t, th, javaSide.kind, name)
		if polls {
			time.Sleep(spinSettle)
			noSubscribers(t, n, name, "a Java spin waiter")
		} else {
			n.awaitSubscribed(javaSide.channel(name, jOwner))
			e.awaitParked(t, th)
		}
		notYet(t, ch, "Java "+javaSide.kind+" lock() while Go spin holds")
		if pttl := n.of(name).int("PTTL", name); pttl < 20000 {
			t.Fatalf("PTTL %dms: the hold would expire soon enough to explain a wake-up", pttl)
		}

		released := time.Now()
		require.NoError(t, g.Unlock(ctx))
		_, at := awaitReply(t, ch, 30*time.Second, "Java "+javaSide.kind+" lock() after Go spin's release")
		took = append(took, at.Sub(released))
		assert.Equal(t, "1", n.of(name).str("HGET", name, jOwner), "Java's hold in the hash")
		e.javaUnlock(t, th, javaSide.kind, name)
		assert.Zero(t, n.of(name).int("EXISTS", name), "lock left behind")
	}
	bound := spinPollBound
	how := "by polling"
	if !polls {
		bound, how = wakeBound, "by RLock's release message"
	}
	t.Logf("%s: Go spin unlock -> Java %s waiter: %v (%s)", e.label, javaSide.kind, took, how)
	for _, d := range took {
		assert.LessOrEqual(t, d, bound, "Java %s waiter got in too late (%s expected)", javaSide.kind, how)
	}
}

// interopSpinJavaToGoSpin: a Go spin waiter gets the lock by its next poll
// once a Java holder (spin or RLock) releases it.
func interopSpinJavaToGoSpin(t *testing.T, e *interopEnv, javaSide lockSide) {
	var took latencies
	for range spinRounds {
		name := unique("interop-spin-j2g-" + javaSide.kind)
		n := e.nodes(t)
		th := e.threads(1)[0]
		ctx, gOwner := e.goOwner(t)
		g := spin.New(e.c, name)

		e.javaLock(t, th, javaSide.kind, name)
		done := make(chan time.Time, 1)
		errc := make(chan error, 1)
		go func() {
			err := g.Lock(ctx)
			done <- time.Now()
			errc <- err
		}()
		time.Sleep(spinSettle)
		noSubscribers(t, n, name, "a Go spin waiter")
		select {
		case <-done:
			t.Fatalf("Go spin Lock returned while Java %s holds: %v", javaSide.kind, <-errc)
		default:
		}
		if pttl := n.of(name).int("PTTL", name); pttl < 20000 {
			t.Fatalf("PTTL %dms: the hold would expire soon enough to explain a wake-up", pttl)
		}

		released := time.Now()
		e.javaUnlock(t, th, javaSide.kind, name)
		var at time.Time
		select {
		case at = <-done:
			require.NoError(t, <-errc)
		case <-time.After(30 * time.Second):
			t.Fatalf("Go spin Lock not in within 30s of Java %s's release", javaSide.kind)
		}
		took = append(took, at.Sub(released))
		assert.Equal(t, "1", n.of(name).str("HGET", name, gOwner), "Go's hold in the hash")
		require.NoError(t, g.Unlock(ctx))
		assert.Zero(t, n.of(name).int("EXISTS", name), "lock left behind")
	}
	t.Logf("%s: Java %s unlock -> Go spin waiter: %v (by polling)", e.label, javaSide.kind, took)
	for _, d := range took {
		assert.LessOrEqual(t, d, spinPollBound, "Go spin waiter got in too late for a poller")
	}
}

// interopSpinJavaToGoRLock: Java's spin unlock publishes nothing, so a Go
// RLock waiter is not woken by it. With poll 0 (the default) it gets in
// only when it tries again, at the end of the TTL it last saw: the Java
// holder has a short lease so that this happens within the test, and the
// hand-off latency must be about the TTL left at the release, far beyond a
// message's. With rlock.WithPollInterval(poll) it gets in within one poll.
func interopSpinJavaToGoRLock(t *testing.T, e *interopEnv, poll time.Duration) {
	name := unique("interop-spin-j2r")
	n := e.nodes(t)
	th := e.threads(1)[0]
	ctx, gOwner := e.goOwner(t)
	var opts []rlock.Option
	if poll > 0 {
		opts = append(opts, rlock.WithPollInterval(poll))
	}
	g := rlock.New(e.c, name, opts...)

	e.java(t, peerReq{Thread: th, Op: "lock", Kind: "spin", Name: name, Lease: spinShortLease})
	done := make(chan time.Time, 1)
	errc := make(chan error, 1)
	go func() {
		err := g.Lock(ctx)
		done <- time.Now()
		errc <- err
	}()
	n.awaitSubscribed(keys.LockChannel(name))
	time.Sleep(300 * time.Millisecond)
	select {
	case <-done:
		t.Fatalf("Go RLock Lock returned while Java spin holds: %v", <-errc)
	default:
	}

	// The lease ends within the PTTL read's round trip of read + left.
	read := time.Now()
	left := time.Duration(n.of(name).int("PTTL", name)) * time.Millisecond
	expiryFrom, expiryTo := read.Add(left), time.Now().Add(left+time.Millisecond)
	require.Greater(t, left, 500*time.Millisecond, "too little of the Java lease left to tell a poll from a message")
	released := time.Now()
	e.javaUnlock(t, th, "spin", name)
	if poll == 0 { // a polling waiter may already have taken it
		assert.Zero(t, n.of(name).int("EXISTS", name), "Java spin unlock left the hash")
	}
	var at time.Time
	select {
	case at = <-done:
		require.NoError(t, <-errc)
	case <-time.After(30 * time.Second):
		t.Fatal("Go RLock Lock not in within 30s of Java spin's release")
	}
	took := at.Sub(released)
	if poll == 0 {
		t.Logf("%s: Java spin unlock -> Go RLock waiter: %v, with %v of the Java lease left at the release (no message: retried at the TTL)",
			e.label, took.Round(100*time.Microsecond), left)
		// With no message the waiter tries again when the TTL it was
		// told runs out, which is the lease's end: not before (a
		// millisecond's rounding aside), and within a loaded machine's
		// lateness after.
		assert.False(t, at.Before(expiryFrom),
			"Go RLock waiter got in %v before the Java lease's end: as a message would wake it", expiryFrom.Sub(at))
		assert.Less(t, at.Sub(expiryTo), loadSlack, "Go RLock waiter got in %v after the Java lease's end, want about at it", at.Sub(expiryTo))
	} else {
		t.Logf("%s: Java spin unlock -> Go RLock waiter polling every %v: %v, with %v of the Java lease left at the release",
			e.label, poll, took.Round(100*time.Microsecond), left)
		assert.LessOrEqual(t, took, poll+loadSlack, "Go RLock waiter did not get in within one poll")
	}
	assert.Equal(t, "1", n.of(name).str("HGET", name, gOwner), "Go's hold in the hash")
	require.NoError(t, g.Unlock(ctx))
	assert.Zero(t, n.of(name).int("EXISTS", name), "lock left behind")
}

// interopSpinMessages taps the lock's channel (SSUBSCRIBE on the cluster,
// SUBSCRIBE on a standalone server, as the waiters listen) while each side
// releases a spin lock by unlock and by forceUnlock: Go's releases publish
// RLock's "0", Java's publish nothing. A marker published on the same node
// after each release bounds the wait.
func interopSpinMessages(t *testing.T, e *interopEnv) {
	name := unique("interop-spin-msgs")
	n := e.nodes(t)
	th := e.threads(1)[0]
	ctx, _ := e.goOwner(t)
	g := spin.New(e.c, name)
	ch := keys.LockChannel(name)
	mark := keys.Prefix("interlock_mark", name) // same slot as ch
	sub, pub := "SUBSCRIBE", "PUBLISH"
	if e.sharded {
		sub, pub = "SSUBSCRIBE", "SPUBLISH"
	}
	tap := openStream(t, e.nodeFor(ch), 2, sub, ch, mark)
	seen := func(label string) []pubMsg {
		t.Helper()
		n.of(mark).do(pub, mark, label)
		var msgs []pubMsg
		for _, v := range tap.until(t, 10*time.Second, func(v any) bool {
			m, ok := asPubMsg(v)
			return ok && m.Channel == mark && m.Payload == label
		}) {
			if m, ok := asPubMsg(v); ok {
				msgs = append(msgs, m)
			}
		}
		return msgs
	}
	kind := map[bool]string{false: "message", true: "smessage"}[e.sharded]
	fromGo := []pubMsg{{Kind: kind, Channel: ch, Payload: "0"}}

	require.NoError(t, g.Lock(ctx))
	require.NoError(t, g.Unlock(ctx))
	assert.Equal(t, fromGo, seen("go-unlock"), "Go spin Unlock")

	require.NoError(t, g.Lock(ctx))
	forced, err := g.ForceUnlock(ctx)
	require.NoError(t, err)
	assert.True(t, forced)
	assert.Equal(t, fromGo, seen("go-force"), "Go spin ForceUnlock")

	e.javaLock(t, th, "spin", name)
	e.javaUnlock(t, th, "spin", name)
	assert.Zero(t, n.of(name).int("EXISTS", name))
	assert.Empty(t, seen("java-unlock"), "Java spin unlock")

	e.javaLock(t, th, "spin", name)
	assert.True(t, e.java(t, peerReq{Thread: th, Op: "forceUnlock", Kind: "spin", Name: name}).Bool(t))
	assert.Zero(t, n.of(name).int("EXISTS", name))
	assert.Empty(t, seen("java-force"), "Java spin forceUnlock")
}
