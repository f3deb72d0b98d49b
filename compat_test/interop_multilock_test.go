package compat_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/multilock"
	"github.com/interlock-go/interlock/rlock"
)

// Live interop of multilock with Redisson's RedissonMultiLock and
// RedissonRedLock (the peer's kinds multi and redLock, peer/.../Multi.java),
// for every peer version, on the shared three-master cluster, so that the
// members of one multi-lock live on different masters.
//
// The exclusion scenario checks, step by step, that a multi-lock held on
// one side makes the other side's attempt on an overlapping set fail and
// give back what it took, and that a release on one side wakes a waiter on
// the other; redLock does the same for the majority rule, and leases
// compares the TTLs both sides leave on the members. The torture has 4 goroutines and 4 Java threads take the
// multi-locks of the four 3-name subsets of n1..n4 (every two of which
// overlap, so that at most one round runs at a time), 500 rounds per side,
// with the names in sorted order on both sides. Every round INCRs and DECRs
// a gauge per name (for Java rounds this test does it, between the lock
// call's reply and the unlock request), which must never leave 1, and
// records its hold per name with timestamps of this one process.
//
//	go test -count=1 -run TestInteropMultiLock -v ./compat_test/

const (
	mlWorkers  = 4                // goroutines, and Java threads
	mlRounds   = 500              // per side, spread evenly over its workers
	mlTryWait  = 30 * time.Second // the wait of the TryLock rounds
	mlLease    = 10 * time.Second // the lease of the lease rounds
	mlDeadline = 3 * time.Minute  // rounds not done by then are deadlocked
	// mlBudget is the wall time a torture run should stay under; exceeding
	// it is logged, not failed.
	mlBudget = 15 * time.Second
)

// mlConfigs are the member kinds of n1..n4 in the torture runs.
var mlConfigs = []struct {
	label string
	kinds []string
}{
	{"reentrant", []string{"reentrant", "reentrant", "reentrant", "reentrant"}},
	{"mixed", []string{"reentrant", "fair", "reentrant", "fair"}},
}

func TestInteropMultiLock(t *testing.T) {
	t.Parallel()
	for _, version := range peerVersions {
		t.Run(version, func(t *testing.T) {
			parallelHeavy(t)
			e := newInteropEnv(t, version, "cluster")
			t.Run("exclusion", func(t *testing.T) { mlExclusion(t, e) })
			t.Run("redLock", func(t *testing.T) { mlRedLock(t, e) })
			t.Run("leases", func(t *testing.T) { mlLeases(t, e) })
			for _, cfg := range mlConfigs {
				t.Run("torture/"+cfg.label, func(t *testing.T) {
					if testing.Short() {
						t.Skip("torture: skipped with -short")
					}
					mlTorture(t, e, cfg.kinds)
				})
			}
		})
	}
}

// mlNames returns n fresh lock names in sorted order.
func mlNames(base string, n int) []string {
	run := unique(base)
	out := make([]string, n)
	for i := range out {
		out[i] = run + ":n" + strconv.Itoa(i+1)
	}
	slices.Sort(out)
	return out
}

// mlGo is the Go multi-lock of names on c, member i of kind kinds[i]
// (reentrant or fair; nil kinds: all reentrant).
func mlGo(c *interlock.Client, kinds, names []string) *multilock.Mutex {
	members := make([]interlock.Locker, len(names))
	for i, n := range names {
		if kinds != nil && kinds[i] == "fair" {
			members[i] = fairlock.New(c, n)
		} else {
			members[i] = rlock.New(c, n)
		}
	}
	return multilock.New(members...)
}

// mlJavaKind is the peer's kind for the multi-lock of members of kinds.
func mlJavaKind(kinds []string) string {
	if !slices.ContainsFunc(kinds, func(k string) bool { return k != "reentrant" }) {
		return "multi"
	}
	return "multi:" + strings.Join(kinds, ",")
}

// mlAbsent fails t unless none of names exists.
func mlAbsent(t *testing.T, n *nodes, what string, names ...string) {
	t.Helper()
	for _, k := range names {
		assert.Zero(t, n.of(k).int("EXISTS", k), "%s: %s left behind", what, k)
	}
}

// mlHeldBy fails t unless owner holds each of names once.
func mlHeldBy(t *testing.T, n *nodes, owner string, names ...string) {
	t.Helper()
	for _, k := range names {
		assert.Equal(t, map[string]string{owner: "1"}, n.of(k).hash(k), "%s", k)
	}
}

// mlExclusion: a Java multi-lock on {b,c,d} keeps Go's {a,b,c} and
// {b,c,d} out, and Go's failed gatherings give a back; Java's unlock wakes
// a Go Lock waiting on b. Then the same the other way round.
func mlExclusion(t *testing.T, e *interopEnv) {
	n := mlNames("ml-excl", 4)
	abc, bcd := n[0:3], n[1:4]
	a := n[0]
	jABC, jBCD := strings.Join(abc, ","), strings.Join(bcd, ",")
	th := e.threads(2)
	j1, j2 := e.p.Owner(t, th[0]), e.p.Owner(t, th[1])
	ctx, gOwner := e.goOwner(t)
	goABC, goBCD := mlGo(e.c, nil, abc), mlGo(e.c, nil, bcd)
	nd := e.nodes(t)
	cl := e.p.version + " cluster"

	// Java holds {b,c,d}.
	e.javaLock(t, th[0], "multi", jBCD)
	mlHeldBy(t, nd, j1, bcd...)
	assert.True(t, e.java(t, peerReq{Thread: th[0], Op: "isHeldByThread", Kind: "multi", Name: jBCD}).Bool(t))
	ok, err := goABC.TryLock(ctx, 0, 0)
	require.NoError(t, err)
	assert.False(t, ok, "Go TryLock(0) of {a,b,c} while Java holds {b,c,d}")
	mlAbsent(t, nd, "a failed Go TryLock(0)", a)
	ok, err = goBCD.TryLock(ctx, 0, 0)
	require.NoError(t, err)
	assert.False(t, ok, "Go TryLock(0) of {b,c,d} while Java holds it")
	start := time.Now()
	ok, err = goABC.TryLock(ctx, 300*time.Millisecond, 0)
	took := time.Since(start)
	require.NoError(t, err)
	assert.False(t, ok, "Go TryLock(300ms) of {a,b,c} while Java holds {b,c,d}")
	assert.GreaterOrEqual(t, took, 300*time.Millisecond)
	assert.Less(t, took, 2*time.Second)
	mlAbsent(t, nd, "a failed Go TryLock(300ms)", a)
	held, err := goABC.IsHeld(ctx)
	require.NoError(t, err)
	assert.False(t, held)

	// A Go Lock of {a,b,c} takes a, then waits on b until Java lets go.
	done := make(chan error, 1)
	go func() { done <- goABC.Lock(ctx) }()
	nd.awaitSubscribed(keys.LockChannel(abc[1]))
	require.True(t, waitFor(10*time.Second, func() bool { return nd.of(a).int("HEXISTS", a, gOwner) == 1 }),
		"the waiting Go Lock holds a")
	select {
	case err := <-done:
		t.Fatalf("Go Lock returned while Java holds b: %v", err)
	default:
	}
	sent := time.Now()
	unlock := e.java(t, peerReq{Thread: th[0], Op: "unlock", Kind: "multi", Name: jBCD})
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(syncReplyWait):
		t.Fatal("Java's unlock did not wake the Go Lock")
	}
	woke := time.Since(sent)
	t.Logf("%s: Java multi-lock unlock -> Go Lock acquired in %v from the request (the unlock took %v in Java)",
		cl, woke.Round(10*time.Microsecond), unlock.Elapsed.Round(10*time.Microsecond))
	assert.Less(t, woke, syncWakeBound, "only the release message explains a wake this fast")
	mlHeldBy(t, nd, gOwner, abc...)
	mlAbsent(t, nd, "after Java's unlock", n[3])
	require.NoError(t, goABC.Unlock(ctx))
	mlAbsent(t, nd, "after Go's unlock", abc...)

	// Go holds {b,c,d}.
	require.NoError(t, goBCD.Lock(ctx))
	mlHeldBy(t, nd, gOwner, bcd...)
	assert.False(t, e.javaTry(t, th[1], "multi", jABC), "Java tryLock() of {a,b,c} while Go holds {b,c,d}")
	mlAbsent(t, nd, "a failed Java tryLock()", a)
	assert.False(t, e.javaTry(t, th[1], "multi", jBCD), "Java tryLock() of {b,c,d} while Go holds it")
	start = time.Now()
	assert.False(t, e.javaTryWait(t, th[1], "multi", jABC, 300*time.Millisecond),
		"Java tryLock(300ms) of {a,b,c} while Go holds {b,c,d}")
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	mlAbsent(t, nd, "a failed Java tryLock(300ms)", a)
	assert.False(t, e.java(t, peerReq{Thread: th[1], Op: "isHeldByThread", Kind: "multi", Name: jBCD}).Bool(t))

	// A Java lock() of {a,b,c} takes a, then waits on b until Go lets go.
	ch := e.javaStart(t, th[1], "multi", jABC)
	nd.awaitSubscribed(keys.LockChannel(abc[1]))
	require.True(t, waitFor(10*time.Second, func() bool { return nd.of(a).int("HEXISTS", a, j2) == 1 }),
		"the waiting Java lock() holds a")
	notYet(t, ch, "Java lock() of {a,b,c}")
	sent = time.Now()
	require.NoError(t, goBCD.Unlock(ctx))
	_, at := awaitReply(t, ch, syncReplyWait, "Java lock() of {a,b,c}")
	woke = at.Sub(sent)
	t.Logf("%s: Go multi-lock unlock -> Java lock() acquired in %v", cl, woke.Round(10*time.Microsecond))
	assert.Less(t, woke, syncWakeBound, "only the release message explains a wake this fast")
	mlHeldBy(t, nd, j2, abc...)
	mlAbsent(t, nd, "after Go's unlock", n[3])
	e.javaUnlock(t, th[1], "multi", jABC)
	mlAbsent(t, nd, "after Java's unlock", n...)
}

// mlRedLock: a Go RedLock (three Clients) and a Java RedLock over the same
// three names count each other's members: while Java holds two, Go's
// attempt fails and gives back what it took; with one, Go holds a majority,
// and Java's attempt fails.
func mlRedLock(t *testing.T, e *interopEnv) {
	n := mlNames("ml-red", 3)
	jn := strings.Join(n, ",")
	th := e.threads(2)
	j1 := e.p.Owner(t, th[0])
	cs := []*interlock.Client{e.c, newLockClient(t, e.rc), newLockClient(t, e.rc)}
	members := make([]interlock.Locker, len(n))
	for i := range n {
		members[i] = rlock.New(cs[i], n[i])
	}
	red := multilock.NewRedLock(members...)
	ctx, _ := e.goOwner(t)
	nd := e.nodes(t)

	e.javaLock(t, th[0], "redLock", jn)
	mlHeldBy(t, nd, j1, n...)
	ok, err := red.TryLock(ctx, 0, 0)
	require.NoError(t, err)
	assert.False(t, ok, "Go RedLock while Java holds 3 of 3")
	mlHeldBy(t, nd, j1, n...)

	e.javaUnlock(t, th[0], "reentrant", n[0]) // Java keeps 2 of 3
	ok, err = red.TryLock(ctx, 0, 0)
	require.NoError(t, err)
	assert.False(t, ok, "Go RedLock while Java holds 2 of 3")
	mlAbsent(t, nd, "a failed Go RedLock", n[0])

	e.javaUnlock(t, th[0], "reentrant", n[1]) // Java keeps 1 of 3
	ok, err = red.TryLock(ctx, 0, 0)
	require.NoError(t, err)
	assert.True(t, ok, "Go RedLock while Java holds 1 of 3")
	held, err := red.IsHeld(ctx)
	require.NoError(t, err)
	assert.True(t, held)
	assert.False(t, e.javaTry(t, th[1], "redLock", jn), "Java RedLock while Go holds 2 of 3")
	require.NoError(t, red.Unlock(ctx))
	mlAbsent(t, nd, "after Go's RedLock unlock", n[0], n[1])
	mlHeldBy(t, nd, j1, n[2])
	e.javaUnlock(t, th[0], "reentrant", n[2])
	mlAbsent(t, nd, "at the end", n...)
}

// mlLeases: with a lease, both sides leave every member with that lease
// (members are taken for twice the wait, then all given the lease), and
// without one, with a watchdog hold.
func mlLeases(t *testing.T, e *interopEnv) {
	const lease = 5 * time.Second
	n := mlNames("ml-lease", 3)
	jn := strings.Join(n, ",")
	th := e.threads(1)[0]
	ctx, _ := e.goOwner(t)
	m := mlGo(e.c, nil, n)
	nd := e.nodes(t)
	pttls := func(what string, lo, hi time.Duration) {
		t.Helper()
		for _, k := range n {
			p := time.Duration(nd.of(k).int("PTTL", k)) * time.Millisecond
			assert.True(t, p > lo && p <= hi, "%s: PTTL of %s is %v, want (%v, %v]", what, k, p, lo, hi)
		}
	}
	for _, c := range []struct {
		what string
		java peerReq
		goDo func() error
		lo   time.Duration
		hi   time.Duration
	}{
		{"tryLock(2s, 5s)", peerReq{Op: "tryLock", Wait: 2 * time.Second, Lease: lease}, func() error {
			ok, err := m.TryLock(ctx, 2*time.Second, lease)
			if err == nil && !ok {
				err = errors.New("not acquired")
			}
			return err
		}, lease - 2*time.Second, lease},
		{"lock(5s)", peerReq{Op: "lock", Lease: lease}, func() error { return m.LockLease(ctx, lease) },
			lease - 2*time.Second, lease},
		{"lock()", peerReq{Op: "lock"}, func() error { return m.Lock(ctx) }, 20 * time.Second, 30 * time.Second},
	} {
		req := c.java
		req.Thread, req.Kind, req.Name = th, "multi", jn
		r := e.java(t, req)
		if req.Op == "tryLock" {
			require.True(t, r.Bool(t), "Java %s", c.what)
		}
		pttls("Java "+c.what, c.lo, c.hi)
		e.javaUnlock(t, th, "multi", jn)
		mlAbsent(t, nd, "Java "+c.what, n...)

		require.NoError(t, c.goDo(), "Go %s", c.what)
		pttls("Go "+c.what, c.lo, c.hi)
		left := m.Remaining(ctx)
		assert.True(t, left > c.lo && left <= c.hi, "Go %s: Remaining %v", c.what, left)
		require.NoError(t, m.Unlock(ctx))
		mlAbsent(t, nd, "Go "+c.what, n...)
	}
}

// mlRecord is one round: the hold of every name of its set.
type mlRecord struct {
	who      string
	java     bool
	set      []int // indexes into the names
	acq, rel int64 // unix nanoseconds: the lock call returned; the unlock is about to be sent
	waited   time.Duration
}

// mlGaugeIn enters the gauges of names for who: each INCR must give 1.
func mlGaugeIn(ctx context.Context, rc rueidis.Client, names []string, who string) ([]string, error) {
	cmds := make(rueidis.Commands, 0, 2*len(names))
	for _, n := range names {
		cmds = append(cmds,
			rc.B().Incr().Key(gaugeKey(n)).Build(),
			rc.B().Set().Key(holderKey(n)).Value(who).Get().Build())
	}
	res := rc.DoMulti(ctx, cmds...)
	var bad []string
	for i, n := range names {
		inside, err := res[2*i].AsInt64()
		if err != nil {
			return nil, err
		}
		prev, err := res[2*i+1].ToString()
		if err != nil && !rueidis.IsRedisNil(err) {
			return nil, err
		}
		if inside != 1 {
			bad = append(bad, fmt.Sprintf("%s entered %s with the gauge at %d (previous holder %s)", who, n, inside, prev))
		}
	}
	return bad, nil
}

// mlGaugeOut leaves the gauges: each DECR must give 0.
func mlGaugeOut(ctx context.Context, rc rueidis.Client, names []string, who string) ([]string, error) {
	cmds := make(rueidis.Commands, 0, len(names))
	for _, n := range names {
		cmds = append(cmds, rc.B().Decr().Key(gaugeKey(n)).Build())
	}
	var bad []string
	for i, r := range rc.DoMulti(ctx, cmds...) {
		left, err := r.AsInt64()
		if err != nil {
			return nil, err
		}
		if left != 0 {
			bad = append(bad, fmt.Sprintf("%s left %s with the gauge at %d", who, names[i], left))
		}
	}
	return bad, nil
}

// mlCounters counts, on every node of the cluster, the commands that
// mention run (every key and channel of the torture's names does).
type mlCounters struct {
	counters []*cmdCounter
	ctls     []*conn
}

func newMLCounters(t *testing.T, e *interopEnv, run string) *mlCounters {
	m := &mlCounters{}
	for _, addr := range e.addrs {
		m.counters = append(m.counters, countCommands(t, addr, run))
		m.ctls = append(m.ctls, dial(t, addr))
	}
	return m
}

// stats sums, over the nodes, the calls of the scripts and of the
// publishes (those scripts run included) on the torture's names, whoever
// sent them.
func (m *mlCounters) stats(t *testing.T) (scripts, publishes int64) {
	t.Helper()
	for i, c := range m.counters {
		counts := c.snapshot(t, m.ctls[i])
		scripts += scriptCalls(counts)
		publishes += counts["publish"] + counts["spublish"]
	}
	return scripts, publishes
}

// mlTorture runs mlRounds rounds on each side over the four 3-name subsets
// of n1..n4, member i of kind kinds[i].
func mlTorture(t *testing.T, e *interopEnv, kinds []string) {
	names := mlNames("ml-torture", 4)
	run := strings.TrimSuffix(names[0], ":n1") // in every name
	var sets [][]int
	for skip := range names {
		var s []int
		for i := range names {
			if i != skip {
				s = append(s, i)
			}
		}
		sets = append(sets, s)
	}
	setNames := func(s []int) []string {
		out := make([]string, len(s))
		for i, ni := range s {
			out[i] = names[ni]
		}
		return out
	}
	setKinds := func(s []int) []string {
		out := make([]string, len(s))
		for i, ni := range s {
			out[i] = kinds[ni]
		}
		return out
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, n := range names {
			for _, k := range []string{gaugeKey(n), holderKey(n)} {
				e.rc.Do(ctx, e.rc.B().Del().Key(k).Build())
			}
		}
	})
	slots := map[string]bool{}
	for _, n := range names {
		slots[e.nodeFor(n)] = true
	}
	label := fmt.Sprintf("Redisson %s, cluster, members %v", e.version, kinds)
	t.Logf("%s: names %v on %d of %d nodes", label, names, len(slots), len(e.addrs))

	// Two Go Clients, two goroutines each; each goroutine is its own owner.
	clients := []*interlock.Client{e.c, newLockClient(t, e.rc)}
	threads := e.threads(mlWorkers)
	for _, th := range threads {
		e.p.Owner(t, th) // creates the Java thread
	}
	perWorker := mlRounds / mlWorkers
	ctx := testCtx(t, mlDeadline)
	counters := newMLCounters(t, e, run)
	scripts0, pubs0 := counters.stats(t)

	var (
		wg         sync.WaitGroup
		mu         sync.Mutex
		records    []mlRecord
		violations []string
		errs       []error
	)
	// worker runs one worker's rounds: acquire(set, mode) returns once the
	// set is held (or fails), release gives it back.
	worker := func(who string, java bool, seed uint64,
		acquire func(s []int, mode int) error, release func(s []int) error) {
		rnd := rand.New(rand.NewPCG(seed, uint64(len(who))))
		var mine []mlRecord
		var bad []string
		err := func() error {
			for r := range perWorker {
				s := sets[rnd.IntN(len(sets))]
				asked := time.Now()
				if err := acquire(s, (r+int(seed))%4); err != nil {
					return fmt.Errorf("round %d, %v: %w", r, setNames(s), err)
				}
				acq := time.Now()
				rec := mlRecord{who: who, java: java, set: s, acq: acq.UnixNano(), waited: acq.Sub(asked)}
				v, err := mlGaugeIn(ctx, e.rc, setNames(s), who)
				if err != nil {
					return err
				}
				bad = append(bad, v...)
				time.Sleep(time.Duration(rnd.Int64N(int64(time.Millisecond)))) // the critical section's "work"
				if v, err = mlGaugeOut(ctx, e.rc, setNames(s), who); err != nil {
					return err
				}
				bad = append(bad, v...)
				rec.rel = time.Now().UnixNano()
				if err := release(s); err != nil {
					return fmt.Errorf("round %d, unlock %v: %w", r, setNames(s), err)
				}
				mine = append(mine, rec)
			}
			return nil
		}()
		mu.Lock()
		defer mu.Unlock()
		records = append(records, mine...)
		violations = append(violations, bad...)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", who, err))
		}
	}

	start := time.Now()
	for g := range mlWorkers {
		c := clients[g%len(clients)]
		gctx := interlock.WithOwner(ctx, interlock.NewOwnerID())
		wg.Go(func() {
			worker(fmt.Sprintf("go.%d", g), false, uint64(g),
				func(s []int, mode int) error {
					m := mlGo(c, setKinds(s), setNames(s))
					var ok bool
					var err error
					switch mode {
					case 0:
						return m.Lock(gctx)
					case 1:
						ok, err = m.TryLock(gctx, mlTryWait, 0)
					case 2:
						ok, err = m.TryLock(gctx, mlTryWait, mlLease)
					default:
						return m.LockLease(gctx, mlLease)
					}
					if err == nil && !ok {
						err = fmt.Errorf("TryLock(%v) mode %d: not acquired", mlTryWait, mode)
					}
					return err
				},
				func(s []int) error { return mlGo(c, setKinds(s), setNames(s)).Unlock(gctx) })
		})
	}
	call := func(req peerReq) (peerReply, error) {
		select {
		case r := <-e.p.Start(t, req):
			if !r.OK {
				return r, fmt.Errorf("java %s %s (thread %d): %s", req.Op, req.Name, req.Thread, r.Err)
			}
			return r, nil
		case <-ctx.Done():
			return peerReply{}, fmt.Errorf("java %s %s (thread %d): %w", req.Op, req.Name, req.Thread, ctx.Err())
		}
	}
	for i, th := range threads {
		wg.Go(func() {
			worker(fmt.Sprintf("java.%d", th), true, uint64(mlWorkers+i),
				func(s []int, mode int) error {
					req := peerReq{Thread: th, Kind: mlJavaKind(setKinds(s)), Name: strings.Join(setNames(s), ",")}
					switch mode {
					case 0:
						req.Op = "lock"
					case 1:
						req.Op, req.Wait = "tryLock", mlTryWait
					case 2:
						req.Op, req.Wait, req.Lease = "tryLock", mlTryWait, mlLease
					default:
						req.Op, req.Lease = "lock", mlLease
					}
					r, err := call(req)
					if err != nil || req.Op == "lock" {
						return err
					}
					var ok bool
					if err := json.Unmarshal(r.Result, &ok); err != nil || !ok {
						return fmt.Errorf("tryLock(%v) mode %d: result %s", mlTryWait, mode, r.Result)
					}
					return nil
				},
				func(s []int) error {
					_, err := call(peerReq{Thread: th, Op: "unlock", Kind: mlJavaKind(setKinds(s)), Name: strings.Join(setNames(s), ",")})
					return err
				})
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	scripts1, pubs1 := counters.stats(t)
	require.NoError(t, errors.Join(errs...), "rounds failed (after %v)", elapsed)
	require.Len(t, records, 2*perWorker*mlWorkers, "rounds completed")

	t.Logf("%s: %d rounds (%d per side, %d workers each) in %v: %.0f rounds/s",
		label, len(records), perWorker*mlWorkers, mlWorkers, elapsed.Round(time.Millisecond), float64(len(records))/elapsed.Seconds())
	t.Logf("%s: server side, every client, on these names: %.1f scripts and %.2f publishes per round",
		label, float64(scripts1-scripts0)/float64(len(records)), float64(pubs1-pubs0)/float64(len(records)))
	if elapsed > mlBudget {
		t.Logf("NOTE: slower than the %v budget", mlBudget)
	}
	assert.Empty(t, violations, "a gauge left 1")

	// The holds of each name never overlap, whoever took them.
	side := func(r mlRecord) string {
		if r.java {
			return "Java"
		}
		return "Go"
	}
	waits := map[string][]time.Duration{}
	perSet := map[string]int{}
	for _, r := range records {
		waits[side(r)] = append(waits[side(r)], r.waited)
		perSet[fmt.Sprintf("%s%v", side(r), r.set)]++
	}
	handoffs := map[string][]time.Duration{}
	for ni, name := range names {
		var recs []mlRecord
		for _, r := range records {
			if slices.Contains(r.set, ni) {
				recs = append(recs, r)
			}
		}
		slices.SortFunc(recs, func(a, b mlRecord) int { return int(a.acq - b.acq) })
		overlaps := 0
		for i := 1; i < len(recs); i++ {
			prev, r := recs[i-1], recs[i]
			if r.acq < prev.rel {
				overlaps++
				if overlaps <= 5 {
					t.Errorf("%s: %s acquired %v at %d before %s released %v at %d", name, r.who, r.set, r.acq, prev.who, prev.set, prev.rel)
				}
			}
			dir := side(prev) + "->" + side(r)
			handoffs[dir] = append(handoffs[dir], time.Duration(r.acq-prev.rel))
		}
		assert.Zero(t, overlaps, "%s: overlapping holds", name)
	}
	t.Logf("%s: rounds by side and set: %v", label, perSet)
	for _, s := range []string{"Go", "Java"} {
		t.Logf("%s: %-4s wait to acquire %s", label, s, latencySummary(waits[s]))
	}
	for _, dir := range []string{"Go->Java", "Java->Go", "Go->Go", "Java->Java"} {
		t.Logf("%s: per-name hand-off %-10s %s", label, dir, latencySummary(handoffs[dir]))
		assert.NotEmpty(t, handoffs[dir], "no %s hand-off at all", dir)
	}

	nd := e.nodes(t)
	for _, n := range names {
		assert.Equal(t, "0", nd.of(gaugeKey(n)).str("GET", gaugeKey(n)), "gauge of %s", n)
		mlAbsent(t, nd, "after the torture", n, keys.Prefix("redisson_lock_queue", n), keys.Prefix("redisson_lock_timeout", n))
	}
}
