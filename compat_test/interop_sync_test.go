package compat_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/latch"
	"github.com/interlock-go/interlock/semaphore"
)

// Live interop of RSemaphore, RPermitExpirableSemaphore and RCountDownLatch
// with a real Redisson JVM (peer_test.go, peer/.../Sync.java), for every
// peer version, on the shared standalone server and on the shared
// three-master cluster. Both sides run with their defaults: a 30s watchdog
// and automatic pub/sub (classic on standalone, sharded on the cluster).
// The mixed-fleet torture of the semaphore is in
// interop_sync_torture_test.go.
//
//	go test -count=1 -run 'TestInteropSync' ./compat_test/

const (
	// syncWakeBound is how soon a waiter on one side must have its permits,
	// or see its latch open, once the other side released or counted down.
	// Java waiters never re-read, so only the message explains a wake this
	// fast; and it leaves seconds for a loaded machine's late wake-ups. Go
	// waiters re-read every lockcore.Repoll (2s), which no bound above it
	// could tell from the message: where Java wakes a Go waiter, a tap on
	// the object's channel checks that Java published the message.
	syncWakeBound = wakeBound
	// syncSettle is how long a subscribed waiter is left alone before the
	// other side acts, so that it is surely blocked on its wait.
	syncSettle = 100 * time.Millisecond
	// syncLease is the lease of the permits that are left to expire.
	syncLease = 200 * time.Millisecond
	// syncReplyWait bounds every wait for a blocked call to come back.
	syncReplyWait = 10 * time.Second
)

func TestInteropSync(t *testing.T) {
	t.Parallel()
	for _, version := range peerVersions {
		for _, topology := range []string{"standalone", "cluster"} {
			t.Run(version+"/"+topology, func(t *testing.T) {
				parallel(t)
				e := newInteropEnv(t, version, topology)
				w := &syncWakes{label: e.label}
				ifExists := !strings.HasPrefix(version, "3.")

				t.Run("semaphore/javaReleaseWakesGo", func(t *testing.T) { syncSemJavaWakesGo(t, e, w, "release") })
				if ifExists {
					t.Run("semaphore/javaReleaseIfExistsWakesGo", func(t *testing.T) { syncSemJavaWakesGo(t, e, w, "releaseIfExists") })
				}
				t.Run("semaphore/goReleaseWakesJava", func(t *testing.T) { syncSemGoWakesJava(t, e, w, false) })
				t.Run("semaphore/goReleaseIfExistsWakesJava", func(t *testing.T) { syncSemGoWakesJava(t, e, w, true) })
				for _, c := range pesWakeCases {
					t.Run("expirable/javaReleaseWakesGo/"+c.label, func(t *testing.T) { syncPESJavaWakesGo(t, e, w, c) })
					t.Run("expirable/goReleaseWakesJava/"+c.label, func(t *testing.T) { syncPESGoWakesJava(t, e, w, c) })
				}
				t.Run("latch/javaCountsDown", func(t *testing.T) { syncLatch(t, e, w, true) })
				t.Run("latch/goCountsDown", func(t *testing.T) { syncLatch(t, e, w, false) })
				t.Run("expirable/javaLeaseReclaimedByGoAvailable", func(t *testing.T) { syncJavaLeaseReclaimedByGo(t, e, w, false) })
				t.Run("expirable/javaLeaseReclaimedByGoAcquire", func(t *testing.T) { syncJavaLeaseReclaimedByGo(t, e, w, true) })
				t.Run("expirable/goLeaseReclaimedByJavaAvailable", func(t *testing.T) { syncGoLeaseReclaimedByJava(t, e, w, false) })
				t.Run("expirable/goLeaseReclaimedByJavaAcquire", func(t *testing.T) { syncGoLeaseReclaimedByJava(t, e, w, true) })
				t.Run("semaphore/readEachOther", func(t *testing.T) { syncSemReadEachOther(t, e) })
				if ifExists {
					t.Run("semaphore/releaseIfExists", func(t *testing.T) { syncSemReleaseIfExists(t, e) })
				}
				t.Run("expirable/readEachOther", func(t *testing.T) { syncPESReadEachOther(t, e) })
				t.Run("expirable/goWatchdogPermitSeenByJava", func(t *testing.T) { syncPESWatchdog(t, e) })
				w.summary(t)
			})
		}
	}
}

// syncWakes collects the wake latencies of one environment.
type syncWakes struct {
	label string
	mu    sync.Mutex
	order []string
	by    map[string]time.Duration
}

// note records how long what took and fails t when it is not under
// syncWakeBound.
func (w *syncWakes) note(t *testing.T, what string, d time.Duration) {
	t.Helper()
	w.mu.Lock()
	if w.by == nil {
		w.by = map[string]time.Duration{}
	}
	if _, dup := w.by[what]; !dup {
		w.order = append(w.order, what)
	}
	w.by[what] = d
	w.mu.Unlock()
	t.Logf("%s: %s in %v", w.label, what, d.Round(10*time.Microsecond))
	assert.Less(t, d, syncWakeBound, "%s: only the message can explain a wake under %v", what, syncWakeBound)
}

func (w *syncWakes) summary(t *testing.T) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ds []time.Duration
	var b strings.Builder
	for _, k := range w.order {
		ds = append(ds, w.by[k])
		fmt.Fprintf(&b, "\n  %-58s %v", k, w.by[k].Round(10*time.Microsecond))
	}
	if len(ds) == 0 {
		return
	}
	t.Logf("%s: %d wakes, max %v:%s", w.label, len(ds), slices.Max(ds).Round(10*time.Microsecond), b.String())
}

// Peer requests for the three kinds.

func jsem(thread int, op, name string, permits int) peerReq {
	return peerReq{Thread: thread, Op: op, Kind: "semaphore", Name: name, Permits: permits}
}

func jpes(thread int, op, name string, permits int, lease time.Duration, ids ...string) peerReq {
	return peerReq{Thread: thread, Op: op, Kind: "expirable", Name: name, Permits: permits, Lease: lease, IDs: ids}
}

func jlatch(thread int, op, name string) peerReq {
	return peerReq{Thread: thread, Op: op, Kind: "latch", Name: name}
}

// hexIDs returns the ids as Redisson prints them.
func hexIDs(ids []semaphore.PermitID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.String()
	}
	return out
}

// parseIDs parses ids Redisson returned.
func parseIDs(t *testing.T, hexes []string) []semaphore.PermitID {
	t.Helper()
	out := make([]semaphore.PermitID, len(hexes))
	for i, h := range hexes {
		require.Regexp(t, permitIDRE, h, "Java permit id")
		id, err := semaphore.ParsePermitID(h)
		require.NoError(t, err)
		require.Equal(t, h, id.String())
		out[i] = id
	}
	return out
}

// awaitChannelSubscribers waits until ch has at least n subscribers on the
// node that serves it, and checks that they subscribed the way both sides
// must on this topology (SSUBSCRIBE on the cluster, SUBSCRIBE on a
// standalone server).
func awaitChannelSubscribers(t *testing.T, e *interopEnv, ch string, n int64) {
	t.Helper()
	nd := e.nodes(t)
	deadline := time.Now().Add(15 * time.Second)
	for {
		classic, sharded := nd.subscribers(ch)
		if classic+sharded >= n {
			if e.sharded {
				assert.Zero(t, classic, "classic subscribers of %s on the cluster", ch)
			} else {
				assert.Zero(t, sharded, "sharded subscribers of %s on a standalone server", ch)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s has %d+%d subscribers after 15s, want %d", ch, classic, sharded, n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// goResult is the outcome of a Go call run in a goroutine.
type goResult struct {
	err error
	at  time.Time
}

// goAsync runs fn in a goroutine; the channel receives its error and when
// it returned.
func goAsync(fn func() error) <-chan goResult {
	ch := make(chan goResult, 1)
	go func() {
		err := fn()
		ch <- goResult{err: err, at: time.Now()}
	}()
	return ch
}

// goNotYet fails t if the call behind ch has already returned.
func goNotYet(t *testing.T, ch <-chan goResult, what string) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("%s returned early: %v", what, r.err)
	default:
	}
}

// goAwait waits for the call behind ch, requires it to have succeeded, and
// returns when it returned.
func goAwait(t *testing.T, ch <-chan goResult, what string) time.Time {
	t.Helper()
	select {
	case r := <-ch:
		require.NoError(t, r.err, what)
		return r.at
	case <-time.After(syncReplyWait):
		t.Fatalf("%s: still blocked after %v", what, syncReplyWait)
		return time.Time{}
	}
}

// syncTap subscribes a plain connection to ch on the node that serves it,
// the way a client must on this topology.
func syncTap(t *testing.T, e *interopEnv, ch string) *stream {
	t.Helper()
	return tapChannel(t, e.nodeFor(ch), ch, e.sharded)
}

// tapNext returns the payload of the next message on ch.
func tapNext(t *testing.T, s *stream, ch string) string {
	t.Helper()
	var payload string
	s.until(t, syncReplyWait, func(v any) bool {
		m, ok := asPubMsg(v)
		if ok && m.Channel == ch {
			payload = m.Payload
		}
		return ok && m.Channel == ch
	})
	return payload
}

// tapQuiet fails t if the tap has received a message it was not asked for.
func tapQuiet(t *testing.T, s *stream) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range s.queue {
		if m, ok := asPubMsg(v); ok {
			t.Fatalf("unexpected message %v", m)
		}
	}
}

// 1. Wakes by message, both ways.

// syncSemJavaWakesGo: Java holds both permits of an RSemaphore, a Go
// Acquire(1) waits, and Java's op (release or releaseIfExists) wakes it.
func syncSemJavaWakesGo(t *testing.T, e *interopEnv, w *syncWakes, op string) {
	ctx := testCtx(t, time.Minute)
	name, th := unique("sync-sem"), e.threads(1)[0]
	s := semaphore.New(e.c, name)
	require.True(t, e.java(t, jsem(th, "trySetPermits", name, 2)).Bool(t))
	e.java(t, jsem(th, "acquire", name, 2)).Void(t)
	ok, err := s.TryAcquire(ctx, 1, 0)
	require.NoError(t, err)
	require.False(t, ok, "Go took a permit Java holds")

	done := goAsync(func() error { return s.Acquire(ctx, 1) })
	ch := keys.SemaphoreChannel(name)
	awaitChannelSubscribers(t, e, ch, 1)
	tap := syncTap(t, e, ch)
	time.Sleep(syncSettle)
	goNotYet(t, done, "Go Acquire(1) with every permit held by Java")
	start := time.Now()
	r := e.java(t, jsem(th, op, name, 1))
	if op == "releaseIfExists" {
		require.True(t, r.Bool(t), "releaseIfExists on an existing semaphore")
	} else {
		r.Void(t)
	}
	w.note(t, "semaphore: Java "+op+"(1) wakes Go Acquire(1)", goAwait(t, done, "Go Acquire(1)").Sub(start))
	tapNext(t, tap, ch) // Java published the release where the Go waiter listens

	n, err := s.Available(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Zero(t, e.java(t, jsem(th, "availablePermits", name, 0)).Int(t))
	require.NoError(t, s.Release(ctx, 1))
	e.java(t, jsem(th, "release", name, 1)).Void(t)
	require.EqualValues(t, 2, e.java(t, jsem(th, "availablePermits", name, 0)).Int(t))
	_, err = s.Delete(ctx)
	require.NoError(t, err)
}

// syncSemGoWakesJava: Go holds both permits, a Java acquire(1) blocks, and
// Go's Release (or ReleaseIfExists) wakes it.
func syncSemGoWakesJava(t *testing.T, e *interopEnv, w *syncWakes, ifExists bool) {
	ctx := testCtx(t, time.Minute)
	name, th := unique("sync-sem"), e.threads(2)
	s := semaphore.New(e.c, name)
	ok, err := s.TrySetPermits(ctx, 2)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, s.Acquire(ctx, 2))
	require.False(t, e.java(t, peerReq{Thread: th[0], Op: "tryAcquire", Kind: "semaphore", Name: name, Permits: 1, Wait: peerNoWait}).Bool(t),
		"Java took a permit Go holds")

	blocked := e.p.Start(t, jsem(th[1], "acquire", name, 1))
	awaitChannelSubscribers(t, e, keys.SemaphoreChannel(name), 1)
	time.Sleep(syncSettle)
	notYet(t, blocked, "Java acquire(1) with every permit held by Go")
	start := time.Now()
	op := "Release"
	if ifExists {
		op = "ReleaseIfExists"
		ok, err := s.ReleaseIfExists(ctx, 1)
		require.NoError(t, err)
		require.True(t, ok)
	} else {
		require.NoError(t, s.Release(ctx, 1))
	}
	r, at := awaitReply(t, blocked, syncReplyWait, "Java acquire(1)")
	r.Void(t)
	w.note(t, "semaphore: Go "+op+"(1) wakes Java acquire(1)", at.Sub(start))

	require.Zero(t, e.java(t, jsem(th[0], "availablePermits", name, 0)).Int(t))
	e.java(t, jsem(th[1], "release", name, 1)).Void(t)
	require.NoError(t, s.Release(ctx, 1))
	n, err := s.Available(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
	_, err = s.Delete(ctx)
	require.NoError(t, err)
}

// pesWakeCase is one hand-off of an RPermitExpirableSemaphore with two
// permits, both held by one side: the waiter on the other side wants want
// permits, and the holder releases the first release of its ids (1: the
// single-id script and its free-count message; 2: the list script, whose
// message is the number released).
type pesWakeCase struct {
	label     string
	javaLease time.Duration // the lease of a Java holder's permits
	goLease   time.Duration // the lease of a Go holder's permits
	want      int
	release   int
}

var pesWakeCases = []pesWakeCase{
	// Holders that never expire: a Java waiter waits for a message only,
	// a Go waiter for a message or its 2s re-read.
	{label: "one/noLease", javaLease: peerNoLease, goLease: semaphore.NoExpiry, want: 1, release: 1},
	// Leased holders (a minute; the Go one held by the watchdog, 30s): a
	// waiter's timer points at the expiry, far beyond the bound.
	{label: "list/leased", javaLease: time.Minute, goLease: 0, want: 2, release: 2},
}

// syncPESJavaWakesGo: Java holds both permits, a Go Acquire waits, and
// Java's release wakes it.
func syncPESJavaWakesGo(t *testing.T, e *interopEnv, w *syncWakes, c pesWakeCase) {
	ctx := testCtx(t, time.Minute)
	name, th := unique("sync-pes"), e.threads(1)[0]
	x := semaphore.NewExpirable(e.c, name)
	require.True(t, e.java(t, jpes(th, "trySetPermits", name, 2, 0)).Bool(t))
	jids := e.java(t, jpes(th, "acquire", name, 2, c.javaLease)).IDs(t)
	parseIDs(t, jids)
	require.Len(t, jids, 2)
	_, ok, err := x.TryAcquire(ctx, 1, 0, 0)
	require.NoError(t, err)
	require.False(t, ok, "Go took a permit Java holds")

	var got []semaphore.PermitID
	done := goAsync(func() (err error) {
		got, err = x.Acquire(ctx, c.want, semaphore.NoExpiry)
		return err
	})
	ch := keys.SemaphoreChannel(name)
	awaitChannelSubscribers(t, e, ch, 1)
	tap := syncTap(t, e, ch)
	time.Sleep(syncSettle)
	goNotYet(t, done, "Go Acquire with every permit held by Java")
	start := time.Now()
	op := "releaseOne"
	if c.release == 1 {
		e.java(t, jpes(th, "releaseOne", name, 0, 0, jids[0])).Void(t)
	} else {
		op = "release"
		e.java(t, jpes(th, "release", name, 0, 0, jids[:c.release]...)).Void(t)
	}
	at := goAwait(t, done, "Go Acquire")
	w.note(t, fmt.Sprintf("expirable %s: Java %s(%d ids) wakes Go Acquire(%d)", c.label, op, c.release, c.want), at.Sub(start))
	tapNext(t, tap, ch) // Java published the release where the Go waiter listens
	require.Len(t, got, c.want)

	// Each side sees the other's permits, and each releases its own.
	require.EqualValues(t, 2-c.release+c.want, e.java(t, jpes(th, "acquiredPermits", name, 0, 0)).Int(t))
	for _, id := range got {
		require.EqualValues(t, -1, e.java(t, jpes(th, "getLeaseTime", name, 0, 0, id.String())).Int(t), "Java's view of Go's NoExpiry permit")
	}
	require.NoError(t, x.Release(ctx, got...))
	if rest := jids[c.release:]; len(rest) > 0 {
		e.java(t, jpes(th, "release", name, 0, 0, rest...)).Void(t)
	}
	n, err := x.Available(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
	_, err = x.Delete(ctx)
	require.NoError(t, err)
}

// syncPESGoWakesJava: Go holds both permits, a Java acquire blocks, and
// Go's Release wakes it.
func syncPESGoWakesJava(t *testing.T, e *interopEnv, w *syncWakes, c pesWakeCase) {
	ctx := testCtx(t, time.Minute)
	name, th := unique("sync-pes"), e.threads(2)
	x := semaphore.NewExpirable(e.c, name)
	ok, err := x.TrySetPermits(ctx, 2)
	require.NoError(t, err)
	require.True(t, ok)
	gids, err := x.Acquire(ctx, 2, c.goLease)
	require.NoError(t, err)
	require.Empty(t, e.java(t, jpes(th[0], "tryAcquire", name, 1, 0)).IDs(t), "Java took a permit Go holds")

	blocked := e.p.Start(t, jpes(th[1], "acquire", name, c.want, peerNoLease))
	awaitChannelSubscribers(t, e, keys.SemaphoreChannel(name), 1)
	time.Sleep(syncSettle)
	notYet(t, blocked, "Java acquire with every permit held by Go")
	start := time.Now()
	require.NoError(t, x.Release(ctx, gids[:c.release]...))
	r, at := awaitReply(t, blocked, syncReplyWait, "Java acquire")
	w.note(t, fmt.Sprintf("expirable %s: Go Release(%d ids) wakes Java acquire(%d)", c.label, c.release, c.want), at.Sub(start))
	jids := parseIDs(t, r.IDs(t))
	require.Len(t, jids, c.want)

	n, err := x.Acquired(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 2-c.release+c.want, n)
	for _, id := range jids {
		left, err := x.LeaseLeft(ctx, id)
		require.NoError(t, err)
		require.Equal(t, semaphore.NoExpiry, left, "Go's view of Java's lease-less permit")
	}
	e.java(t, jpes(th[1], "release", name, 0, 0, hexIDs(jids)...)).Void(t)
	if rest := gids[c.release:]; len(rest) > 0 {
		require.NoError(t, x.Release(ctx, rest...))
	}
	require.EqualValues(t, 2, e.java(t, jpes(th[0], "availablePermits", name, 0, 0)).Int(t))
	_, err = x.Delete(ctx)
	require.NoError(t, err)
}

// 3. The latch opens for waiters on both sides.

// syncLatch: two Go Awaits and two Java awaits (untimed and timed) wait on
// a latch of count 2 set by one side; the other side counts it down.
func syncLatch(t *testing.T, e *interopEnv, w *syncWakes, javaCounts bool) {
	ctx := testCtx(t, time.Minute)
	name, th := unique("sync-latch"), e.threads(3)
	l := latch.New(e.c, name)
	if javaCounts {
		ok, err := l.TrySetCount(ctx, 2)
		require.NoError(t, err)
		require.True(t, ok)
	} else {
		r := jlatch(th[0], "trySetCount", name)
		r.Count = 2
		require.True(t, e.java(t, r).Bool(t))
	}
	count := func(want int64) {
		t.Helper()
		n, err := l.Count(ctx)
		require.NoError(t, err)
		require.Equal(t, want, n, "Go Count")
		require.Equal(t, want, e.java(t, jlatch(th[0], "getCount", name)).Int(t), "Java getCount")
	}
	countDown := func() {
		t.Helper()
		if javaCounts {
			e.java(t, jlatch(th[0], "countDown", name)).Void(t)
		} else {
			require.NoError(t, l.CountDown(ctx))
		}
	}
	count(2)

	g1 := goAsync(func() error { return l.Await(ctx) })
	g2 := goAsync(func() error { return l.Await(ctx) })
	untimed := jlatch(th[1], "await", name)
	untimed.Wait = peerForever
	timed := jlatch(th[2], "await", name)
	timed.Wait = 30 * time.Second
	j1, j2 := e.p.Start(t, untimed), e.p.Start(t, timed)
	// One subscription for the Go Client's two waiters, one for the JVM's.
	lch := keys.LatchChannel(name)
	awaitChannelSubscribers(t, e, lch, 2)
	time.Sleep(syncSettle)
	notAny := func(what string) {
		t.Helper()
		goNotYet(t, g1, "Go Await "+what)
		goNotYet(t, g2, "Go Await "+what)
		notYet(t, j1, "Java await() "+what)
		notYet(t, j2, "Java await(30s) "+what)
	}
	notAny("at count 2")
	countDown()
	count(1)
	time.Sleep(syncSettle)
	notAny("at count 1")

	side := "Go CountDown"
	if javaCounts {
		side = "Java countDown"
	}
	tap := syncTap(t, e, lch) // after the first count-down's message
	start := time.Now()
	countDown()
	for i, g := range []<-chan goResult{g1, g2} {
		w.note(t, fmt.Sprintf("latch: %s to 0 opens Go Await #%d", side, i+1), goAwait(t, g, "Go Await").Sub(start))
	}
	r, at := awaitReply(t, j1, syncReplyWait, "Java await()")
	r.Void(t)
	w.note(t, "latch: "+side+" to 0 opens Java await()", at.Sub(start))
	r, at = awaitReply(t, j2, syncReplyWait, "Java await(30s)")
	require.True(t, r.Bool(t), "Java await(30s) on an open latch")
	w.note(t, "latch: "+side+" to 0 opens Java await(30s)", at.Sub(start))

	tapNext(t, tap, lch) // the count-down to 0 was published where the waiters listen
	count(0)
	require.False(t, syncState{t, e.rc}.exists(name), "the latch key outlived count 0")
	require.NoError(t, l.Await(ctx), "Go Await on an open latch")
	timed.Wait = 0
	require.True(t, e.java(t, timed).Bool(t), "Java await(0) on an open latch")
}

// 4. Expired permits come back through the other side.

// syncJavaLeaseReclaimedByGo: Java takes the only permit with a 200ms
// lease; once it has expired, a Go Available (or a Go Acquire that was
// waiting for it) reclaims it, and the reclaim is announced.
func syncJavaLeaseReclaimedByGo(t *testing.T, e *interopEnv, w *syncWakes, byAcquire bool) {
	ctx := testCtx(t, time.Minute)
	name, th := unique("sync-pes"), e.threads(1)[0]
	ch, tk := keys.SemaphoreChannel(name), keys.Suffix(name, "timeout")
	st := syncState{t, e.rc}
	x := semaphore.NewExpirable(e.c, name)
	require.True(t, e.java(t, jpes(th, "trySetPermits", name, 1, 0)).Bool(t))
	before := time.Now()
	jid := e.java(t, jpes(th, "acquire", name, 1, syncLease)).IDs(t)
	acquired := time.Now()
	require.Len(t, jid, 1)
	parseIDs(t, jid)
	score, ok := st.score(tk, jid[0])
	require.True(t, ok, "Java's permit is not in %s", tk)
	lo, hi := before.Add(syncLease).UnixMilli(), acquired.Add(syncLease).UnixMilli()
	assert.True(t, score >= float64(lo) && score <= float64(hi), "Java's expiry %v is not its clock plus the lease, in [%d, %d]", score, lo, hi)

	if byAcquire {
		tap := syncTap(t, e, ch)
		gids, err := x.Acquire(ctx, 1, 30*time.Second) // waits for the expiry, by its own timer
		require.NoError(t, err)
		late := time.Since(time.UnixMilli(int64(score)))
		require.Equal(t, "1", tapNext(t, tap, ch), "the reclaim's message (the new free count)")
		assert.GreaterOrEqual(t, late, time.Duration(0), "Go took the permit before its lease ran out")
		w.note(t, "expirable: Go Acquire reclaims Java's leased permit (time past its expiry)", late)
		_, ok = st.score(tk, jid[0])
		require.False(t, ok, "Java's expired permit is still in %s", tk)
		_, ok = st.score(tk, gids[0].String())
		require.True(t, ok, "Go's permit is not in %s", tk)
		left := e.java(t, jpes(th, "getLeaseTime", name, 0, 0, gids[0].String())).Int(t)
		require.True(t, left > 25000 && left <= 30000, "Java getLeaseTime of Go's 30s permit = %d", left)
		require.NoError(t, x.Release(ctx, gids...))
	} else {
		time.Sleep(time.Until(acquired.Add(syncLease + 100*time.Millisecond)))
		_, ok = st.score(tk, jid[0])
		require.True(t, ok, "Redis reclaimed a permit by itself")
		st.wantGet(name, "0")
		tap := syncTap(t, e, ch)
		n, err := x.Available(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 1, n, "Go Available after Java's lease ran out")
		require.Equal(t, "1", tapNext(t, tap, ch), "the reclaim's message (the new free count)")
		_, ok = st.score(tk, jid[0])
		require.False(t, ok, "Java's expired permit is still in %s", tk)
		st.wantGet(name, "1")
		// A read with nothing left to reclaim announces nothing.
		n, err = x.Available(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		time.Sleep(50 * time.Millisecond)
		tapQuiet(t, tap)
	}
	// Java's release of the reclaimed permit fails: it is no longer out.
	require.False(t, e.java(t, jpes(th, "tryReleaseOne", name, 0, 0, jid[0])).Bool(t), "Java released a reclaimed permit")
	require.EqualValues(t, 1, e.java(t, jpes(th, "availablePermits", name, 0, 0)).Int(t))
	_, err := x.Delete(ctx)
	require.NoError(t, err)
}

// syncGoLeaseReclaimedByJava: Go takes the only permit with a 200ms lease;
// once it has expired, a Java availablePermits (or a Java acquire that was
// waiting for it) reclaims it, and the reclaim is announced. Java's read of
// the lease must come before the lease runs out, or Java's own script
// reclaims the permit first: on a loaded machine the scenario runs again
// with a longer lease.
func syncGoLeaseReclaimedByJava(t *testing.T, e *interopEnv, w *syncWakes, byAcquire bool) {
	for lease := syncLease; lease <= 8*syncLease; lease *= 2 {
		if syncGoLeaseReclaimedOnce(t, e, w, byAcquire, lease) {
			return
		}
	}
	t.Fatalf("Java's read of Go's lease came after it ran out with leases of %v to %v", syncLease, 8*syncLease)
}

// syncGoLeaseReclaimedOnce is syncGoLeaseReclaimedByJava with one lease;
// false: Java's read of the lease came after it ran out, and nothing was
// checked after it.
func syncGoLeaseReclaimedOnce(t *testing.T, e *interopEnv, w *syncWakes, byAcquire bool, lease time.Duration) bool {
	ctx := testCtx(t, time.Minute)
	name, th := unique("sync-pes"), e.threads(2)
	ch, tk := keys.SemaphoreChannel(name), keys.Suffix(name, "timeout")
	st := syncState{t, e.rc}
	x := semaphore.NewExpirable(e.c, name)
	ok, err := x.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	require.True(t, ok)
	gids, err := x.Acquire(ctx, 1, lease)
	acquired := time.Now()
	require.NoError(t, err)
	guard := x.Guard(ctx, gids...)
	gid := gids[0].String()
	score, ok := st.score(tk, gid)
	require.True(t, ok, "Go's permit is not in %s", tk)
	lo, hi := acquired.Add(-time.Second).Add(lease).UnixMilli(), acquired.Add(lease).UnixMilli()
	require.True(t, score >= float64(lo) && score <= float64(hi), "Go's expiry %v is not its clock plus the lease, in [%d, %d]", score, lo, hi)
	if r := e.p.Do(t, jpes(th[0], "getLeaseTime", name, 0, 0, gid)); r.OK {
		left := r.Int(t)
		require.LessOrEqual(t, left, lease.Milliseconds(), "Java getLeaseTime of Go's %v permit", lease)
		if time.Now().UnixMilli() < int64(score) { // the reply came before the expiry, so Java read its clock before it too
			require.Positive(t, left, "Java getLeaseTime of Go's %v permit before its expiry", lease)
		}
	} else {
		// On a loaded machine the call can reach the server after the
		// short lease ran out, and Redisson refuses an expired permit.
		require.GreaterOrEqual(t, time.Now().UnixMilli(), int64(score), "Java getLeaseTime failed before Go's permit expired: %s", r.Err)
		require.Contains(t, r.Err, "has already been released or doesn't exist")
		t.Logf("Java getLeaseTime came after Go's %v lease ran out (%v after the acquire), again with a longer lease: %s", lease, time.Since(acquired), r.Err)
		_, err = x.Delete(ctx)
		require.NoError(t, err)
		return false
	}

	if byAcquire {
		tap := syncTap(t, e, ch)
		r, at := awaitReply(t, e.p.Start(t, jpes(th[1], "acquire", name, 1, peerNoLease)), syncReplyWait, "Java acquire")
		late := at.Sub(time.UnixMilli(int64(score)))
		jids := parseIDs(t, r.IDs(t))
		require.Len(t, jids, 1)
		require.Equal(t, "1", tapNext(t, tap, ch), "the reclaim's message (the new free count)")
		assert.GreaterOrEqual(t, late, time.Duration(0), "Java took the permit before its lease ran out")
		w.note(t, "expirable: Java acquire reclaims Go's leased permit (time past its expiry)", late)
		_, ok = st.score(tk, gid)
		require.False(t, ok, "Go's expired permit is still in %s", tk)
		sc, ok := st.score(tk, jids[0].String())
		require.True(t, ok && sc == peerNever, "Java's lease-less permit scores %v, %v", sc, ok)
		// Go gives back Java's permit by its id.
		require.NoError(t, x.Release(ctx, jids...))
	} else {
		time.Sleep(time.Until(acquired.Add(lease + 100*time.Millisecond)))
		_, ok = st.score(tk, gid)
		require.True(t, ok, "Redis reclaimed a permit by itself")
		tap := syncTap(t, e, ch)
		require.EqualValues(t, 1, e.java(t, jpes(th[0], "availablePermits", name, 0, 0)).Int(t),
			"Java availablePermits after Go's lease ran out")
		require.Equal(t, "1", tapNext(t, tap, ch), "the reclaim's message (the new free count)")
		_, ok = st.score(tk, gid)
		require.False(t, ok, "Go's expired permit is still in %s", tk)
		st.wantGet(name, "1")
	}
	// The Go Client knows its lease ran out: its release says the permit
	// expired, though Java reclaimed it first.
	select {
	case <-guard.Done():
		assert.ErrorIs(t, context.Cause(guard), semaphore.ErrPermitLost, "the Guard of an expired permit")
	case <-time.After(guardEnds):
		t.Errorf("the Guard of Go's permit is not done %v after its lease ran out", guardEnds)
	}
	assert.Zero(t, x.Remaining(gids[0]), "Remaining of an expired permit")
	require.ErrorIs(t, x.Release(ctx, gids...), semaphore.ErrPermitExpired, "Go's release of its permit that Java reclaimed")
	n, err := x.Available(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	_, err = x.Delete(ctx)
	require.NoError(t, err)
	return true
}

// 5. Each side reads and changes the other's objects.

func syncSemReadEachOther(t *testing.T, e *interopEnv) {
	ctx := testCtx(t, time.Minute)
	name, th := unique("sync-sem"), e.threads(1)[0]
	s := semaphore.New(e.c, name)
	avail := func(want int64) {
		t.Helper()
		n, err := s.Available(ctx)
		require.NoError(t, err)
		require.Equal(t, want, n, "Go Available")
		require.Equal(t, want, e.java(t, jsem(th, "availablePermits", name, 0)).Int(t), "Java availablePermits")
	}

	require.True(t, e.java(t, jsem(th, "trySetPermits", name, 5)).Bool(t))
	avail(5)
	ok, err := s.TrySetPermits(ctx, 3)
	require.NoError(t, err)
	require.False(t, ok, "Go TrySetPermits on Java's semaphore")
	ttl, err := s.TTL(ctx)
	require.NoError(t, err)
	require.Equal(t, time.Duration(-1), ttl)
	ok, err = s.TryAcquire(ctx, 2, 0)
	require.NoError(t, err)
	require.True(t, ok)
	avail(3)
	require.NoError(t, s.AddPermits(ctx, -1))
	avail(2)
	e.java(t, jsem(th, "addPermits", name, 4)).Void(t)
	avail(6)
	require.EqualValues(t, 6, e.java(t, jsem(th, "drainPermits", name, 0)).Int(t))
	avail(0)
	require.NoError(t, s.Release(ctx, 3))
	avail(3)
	n, err := s.Drain(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 3, n)
	avail(0)
	require.True(t, e.java(t, jsem(th, "delete", name, 0)).Bool(t))
	ok, err = s.Delete(ctx)
	require.NoError(t, err)
	require.False(t, ok, "Go Delete after Java's")

	// The TTL forms, each read by the other side.
	jn, gn := unique("sync-sem-ttl"), unique("sync-sem-ttl")
	r := jsem(th, "trySetPermits", jn, 2)
	r.TTL = time.Minute
	require.True(t, e.java(t, r).Bool(t))
	ttl, err = semaphore.New(e.c, jn).TTL(ctx)
	require.NoError(t, err)
	require.True(t, ttl > 50*time.Second && ttl <= time.Minute, "Go TTL of Java's 1m semaphore = %v", ttl)
	ok, err = semaphore.New(e.c, gn).TrySetPermitsTTL(ctx, 2, time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	ms := e.java(t, jsem(th, "remainTimeToLive", gn, 0)).Int(t)
	require.True(t, ms > 50000 && ms <= 60000, "Java remainTimeToLive of Go's 1m semaphore = %d", ms)
	for _, k := range []string{jn, gn} {
		_, err := semaphore.New(e.c, k).Delete(ctx)
		require.NoError(t, err)
	}
}

// syncSemReleaseIfExists (Redisson 4.x): both sides refuse to create a
// missing semaphore, and add to an existing one.
func syncSemReleaseIfExists(t *testing.T, e *interopEnv) {
	ctx := testCtx(t, time.Minute)
	name, th := unique("sync-sem-rie"), e.threads(1)[0]
	st := syncState{t, e.rc}
	s := semaphore.New(e.c, name)
	require.False(t, e.java(t, jsem(th, "releaseIfExists", name, 1)).Bool(t))
	ok, err := s.ReleaseIfExists(ctx, 1)
	require.NoError(t, err)
	require.False(t, ok)
	require.False(t, st.exists(name), "releaseIfExists created the semaphore")

	ok, err = s.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, e.java(t, jsem(th, "releaseIfExists", name, 2)).Bool(t))
	n, err := s.Available(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 3, n)
	ok, err = s.ReleaseIfExists(ctx, 1)
	require.NoError(t, err)
	require.True(t, ok)
	require.EqualValues(t, 4, e.java(t, jsem(th, "availablePermits", name, 0)).Int(t))
	_, err = s.Delete(ctx)
	require.NoError(t, err)
}

func syncPESReadEachOther(t *testing.T, e *interopEnv) {
	ctx := testCtx(t, time.Minute)
	name, th := unique("sync-pes"), e.threads(1)[0]
	x := semaphore.NewExpirable(e.c, name)
	java := func(op string) int64 {
		t.Helper()
		return e.java(t, jpes(th, op, name, 0, 0)).Int(t)
	}
	counts := func(avail, acquired int64) {
		t.Helper()
		a, err := x.Available(ctx)
		require.NoError(t, err)
		q, err := x.Acquired(ctx)
		require.NoError(t, err)
		p, err := x.Permits(ctx)
		require.NoError(t, err)
		require.Equal(t, []int64{avail, acquired, avail + acquired}, []int64{a, q, p}, "Go Available, Acquired, Permits")
		require.Equal(t, []int64{avail, acquired, avail + acquired},
			[]int64{java("availablePermits"), java("acquiredPermits"), java("getPermits")},
			"Java availablePermits, acquiredPermits, getPermits")
	}
	leaseMs := func(id semaphore.PermitID) int64 {
		t.Helper()
		return e.java(t, jpes(th, "getLeaseTime", name, 0, 0, id.String())).Int(t)
	}

	require.True(t, e.java(t, jpes(th, "trySetPermits", name, 5, 0)).Bool(t))
	ok, err := x.TrySetPermits(ctx, 3)
	require.NoError(t, err)
	require.False(t, ok, "Go TrySetPermits on Java's semaphore")
	counts(5, 0)

	// Go's leased permits, read by Java by their hex ids.
	gids, err := x.Acquire(ctx, 2, 10*time.Second)
	require.NoError(t, err)
	for _, id := range gids {
		ms := leaseMs(id)
		require.True(t, ms > 8000 && ms <= 10000, "Java getLeaseTime of Go's 10s permit %s = %d", id, ms)
	}
	counts(3, 2)

	// Java's lease-less permit, read by Go.
	jids := parseIDs(t, e.java(t, jpes(th, "acquire", name, 1, peerNoLease)).IDs(t))
	left, err := x.LeaseLeft(ctx, jids[0])
	require.NoError(t, err)
	require.Equal(t, semaphore.NoExpiry, left, "Go LeaseLeft of Java's lease-less permit")
	counts(2, 3)

	// Each side moves the other's lease.
	r := jpes(th, "updateLeaseTime", name, 0, 20*time.Second, gids[0].String())
	require.True(t, e.java(t, r).Bool(t))
	left, err = x.LeaseLeft(ctx, gids[0])
	require.NoError(t, err)
	require.True(t, left > 18*time.Second && left <= 20*time.Second, "Go LeaseLeft after Java's updateLeaseTime(20s) = %v", left)
	ok, err = x.UpdateLease(ctx, jids[0], 15*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	ms := leaseMs(jids[0])
	require.True(t, ms > 13000 && ms <= 15000, "Java getLeaseTime after Go's UpdateLease(15s) = %d", ms)

	// Each side releases the other's permit by its id.
	e.java(t, jpes(th, "releaseOne", name, 0, 0, gids[0].String())).Void(t)
	require.ErrorIs(t, x.Release(ctx, gids[0]), semaphore.ErrUnknownPermit, "Go's release of a permit Java released")
	require.NoError(t, x.Release(ctx, jids...))
	r = jpes(th, "releaseOne", name, 0, 0, jids[0].String())
	rep := e.p.Do(t, r)
	require.False(t, rep.OK, "Java released a permit Go released")
	require.Contains(t, rep.Err, "IllegalArgumentException")
	counts(4, 1)

	// Totals set by one side, read by the other.
	e.java(t, jpes(th, "setPermits", name, 3, 0)).Void(t)
	counts(2, 1)
	require.NoError(t, x.Release(ctx, gids[1]))
	counts(3, 0)
	require.NoError(t, x.SetPermits(ctx, 6))
	counts(6, 0)
	require.NoError(t, x.AddPermits(ctx, -2))
	counts(4, 0)
	e.java(t, jpes(th, "addPermits", name, 1, 0)).Void(t)
	counts(5, 0)
	require.True(t, e.java(t, jpes(th, "delete", name, 0, 0)).Bool(t))
	counts(0, 0)
}

// syncPESWatchdog: a Go permit held by the watchdog (lease 0, a 2s
// watchdog here: short, yet renewed, every third of it, often enough that a
// loaded machine's late wake-ups never let it expire) is an acquired permit
// for Java, whose reads (each one reclaims by Java's clock) keep finding it
// unexpired, its expiry moving, for several watchdog timeouts; then Go
// releases it.
func syncPESWatchdog(t *testing.T, e *interopEnv) {
	// A 4 s watchdog renews every 1.33 s and survives a stall of 2.67 s
	// on a loaded machine; the checks, wd/2 apart, outlast it.
	const wd = 4 * time.Second
	ctx := testCtx(t, time.Minute)
	name, th := unique("sync-pes-wd"), e.threads(1)[0]
	tk := keys.Suffix(name, "timeout")
	st := syncState{t, e.rc}
	wc := newLockClient(t, e.rc, interlock.WithWatchdogTimeout(wd))
	x := semaphore.NewExpirable(wc, name)
	ok, err := x.TrySetPermits(ctx, 2)
	require.NoError(t, err)
	require.True(t, ok)
	gids, err := x.Acquire(ctx, 1, 0)
	require.NoError(t, err)
	gid := gids[0].String()
	assert.GreaterOrEqual(t, wc.Stats().Holds, 1, "the watchdog permit is not among the Client's holds")

	prev, ok := st.score(tk, gid)
	require.True(t, ok)
	moved := 0
	start := time.Now()
	for i := range 4 {
		if i > 0 {
			time.Sleep(wd / 2)
		}
		require.EqualValues(t, 1, e.java(t, jpes(th, "acquiredPermits", name, 0, 0)).Int(t),
			"Java acquiredPermits %v into a %v watchdog", time.Since(start).Round(time.Millisecond), wd)
		// Java reads its clock once it has the request; Go's watchdog may
		// renew the permit (to its clock + wd) until the script runs. So
		// the lease left is at most wd plus the request's round trip.
		sent := time.Now()
		ms := e.java(t, jpes(th, "getLeaseTime", name, 0, 0, gid)).Int(t)
		rtt := time.Since(sent)
		require.True(t, ms > 0 && ms <= (wd+rtt).Milliseconds()+1, "Java getLeaseTime of Go's watchdog permit = %d (the request took %v)", ms, rtt)
		sc, ok := st.score(tk, gid)
		require.True(t, ok)
		if sc > prev {
			moved++
		}
		prev = sc
	}
	t.Logf("%s: Go's watchdog permit stayed acquired for Java over %v (a %v watchdog), its expiry moved in %d of 3 checks",
		e.label, time.Since(start).Round(time.Millisecond), wd, moved)
	// Renewed every wd/3, it moves in every wd/2 period but one that a
	// stall of the machine straddles.
	require.GreaterOrEqual(t, moved, 2, "the expiry did not move from one check to the next")
	require.EqualValues(t, 1, e.java(t, jpes(th, "availablePermits", name, 0, 0)).Int(t))

	require.NoError(t, x.Release(ctx, gids...))
	require.Zero(t, e.java(t, jpes(th, "acquiredPermits", name, 0, 0)).Int(t))
	require.EqualValues(t, 2, e.java(t, jpes(th, "availablePermits", name, 0, 0)).Int(t))
	_, err = x.Delete(ctx)
	require.NoError(t, err)
}
