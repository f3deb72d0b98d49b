package compat_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
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
	"github.com/interlock-go/interlock/fenced"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/rlock"
)

// Mixed-fleet torture on the cluster: two Go worker processes and one
// Redisson JVM, eight workers each, contend for three locks, one of each
// kind that has a plain mutual-exclusion contract (reentrant, fair,
// fenced), 3,000 acquisitions in all. Every hold INCRs and DECRs a gauge in
// the lock's slot (for Java holds the parent does it, between the Java
// lock call's reply and the Java unlock request), which must never exceed 1.
// Every hold is also recorded with wall-clock timestamps taken on this one
// machine (acquired: when the lock call returned; released: just before the
// unlock was sent), from which the test checks that holds never overlap,
// that fencing tokens grow in acquisition order, and reports hand-off
// latency by direction.
//
//	go test -count=1 -run TestInteropTorture -v ./compat_test/

const (
	tortureGoProcs = 2
	tortureWorkers = 8 // per Go process, and Java threads
	tortureTotal   = 3000
	tortureIters   = tortureTotal / ((tortureGoProcs + 1) * tortureWorkers)
	// tortureBudget is the wall time a version's run should stay under;
	// exceeding it is logged, not failed.
	tortureBudget = 45 * time.Second

	modeTorture   = "interop-torture"
	envTortureOut = "INTERLOCK_COMPAT_TORTURE_OUT" // where a worker writes its records
)

// tortureKinds are the kinds of the three locks, by index.
var tortureKinds = []string{"reentrant", "fair", "fenced"}

func holderKey(name string) string { return keys.Prefix("compat_holder", name) }

// holdRecord is one acquisition.
type holdRecord struct {
	who      string // "go<pid>.<goroutine>" or "java.<thread>"
	java     bool
	name     int
	acq, rel int64 // unix nanoseconds
	token    int64 // fenced only
}

// tortureGauge enters the gauge of name for who: INCR must give 1, and the
// holder key is swapped to who. It returns an error describing a violation.
func tortureGaugeIn(ctx context.Context, rc rueidis.Client, name, who string) (violation string, err error) {
	res := rc.DoMulti(ctx,
		rc.B().Incr().Key(gaugeKey(name)).Build(),
		rc.B().Set().Key(holderKey(name)).Value(who).Get().Build())
	inside, err := res[0].AsInt64()
	if err != nil {
		return "", err
	}
	prev, err := res[1].ToString()
	if err != nil && !rueidis.IsRedisNil(err) {
		return "", err
	}
	if inside != 1 {
		return fmt.Sprintf("%s entered %s with the gauge at %d (previous holder %s)", who, name, inside, prev), nil
	}
	return "", nil
}

// tortureGaugeOut leaves the gauge: DECR must give 0.
func tortureGaugeOut(ctx context.Context, rc rueidis.Client, name, who string) (violation string, err error) {
	left, err := rc.Do(ctx, rc.B().Decr().Key(gaugeKey(name)).Build()).AsInt64()
	if err != nil {
		return "", err
	}
	if left != 0 {
		return fmt.Sprintf("%s left %s with the gauge at %d", who, name, left), nil
	}
	return "", nil
}

// tortureWorker: "ready" → (go) → goroutines take random locks → records
// written to the file named by envTortureOut → "done <acquisitions>
// <violations>" → (exit).
func tortureWorker() error {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: strings.Split(os.Getenv(envAddrs), ",")})
	if err != nil {
		return err
	}
	defer rc.Close()
	names := strings.Split(os.Getenv(envNames), ",")
	goroutines, err1 := strconv.Atoi(os.Getenv(envGoroutines))
	iterations, err2 := strconv.Atoi(os.Getenv(envIterations))
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	c, err := interlock.New(rc)
	if err != nil {
		return err
	}
	defer c.Close()
	stdin := bufio.NewReader(os.Stdin)
	fmt.Println("ready")
	if err := expectLine(stdin, "go"); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), workerTimeout)
	defer cancel()

	var (
		wg         sync.WaitGroup
		mu         sync.Mutex
		records    []holdRecord
		violations []string
		errs       []error
	)
	for g := range goroutines {
		wg.Go(func() {
			who := fmt.Sprintf("go%d.%d", os.Getpid(), g)
			rnd := rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(g)))
			var mine []holdRecord
			var bad []string
			err := func() error {
				for range iterations {
					ni := rnd.IntN(len(names))
					name := names[ni]
					var (
						token  int64
						unlock func(context.Context) error
					)
					switch tortureKinds[ni] {
					case "reentrant":
						m := rlock.New(c, name)
						if err := m.Lock(ctx); err != nil {
							return fmt.Errorf("lock %s: %w", name, err)
						}
						unlock = m.Unlock
					case "fair":
						m := fairlock.New(c, name)
						if err := m.Lock(ctx); err != nil {
							return fmt.Errorf("lock %s: %w", name, err)
						}
						unlock = m.Unlock
					case "fenced":
						m := fenced.New(c, name)
						tok, err := m.LockToken(ctx)
						if err != nil {
							return fmt.Errorf("lock %s: %w", name, err)
						}
						token, unlock = int64(tok), m.Unlock
					}
					rec := holdRecord{who: who, name: ni, acq: time.Now().UnixNano(), token: token}
					v, err := tortureGaugeIn(ctx, rc, name, who)
					if err != nil {
						return err
					}
					if v != "" {
						bad = append(bad, v)
					}
					if v, err = tortureGaugeOut(ctx, rc, name, who); err != nil {
						return err
					}
					if v != "" {
						bad = append(bad, v)
					}
					rec.rel = time.Now().UnixNano()
					if err := unlock(ctx); err != nil {
						return fmt.Errorf("unlock %s: %w", name, err)
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
				cancel()
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, v := range violations {
		fmt.Fprintln(os.Stderr, "VIOLATION:", v)
	}
	var b strings.Builder
	for _, r := range records {
		fmt.Fprintf(&b, "%s %d %d %d %d\n", r.who, r.name, r.acq, r.rel, r.token)
	}
	if err := os.WriteFile(os.Getenv(envTortureOut), []byte(b.String()), 0o644); err != nil {
		return err
	}
	fmt.Printf("done %d %d\n", len(records), len(violations))
	return expectLine(stdin, "exit")
}

// readHoldRecords parses a worker's records file.
func readHoldRecords(path string) ([]holdRecord, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []holdRecord
	for line := range strings.Lines(string(data)) {
		var r holdRecord
		if _, err := fmt.Sscanf(line, "%s %d %d %d %d", &r.who, &r.name, &r.acq, &r.rel, &r.token); err != nil {
			return nil, fmt.Errorf("%s: line %q: %w", path, line, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func TestInteropTorture(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("torture: skipped with -short")
	}
	for _, version := range peerVersions {
		t.Run(version, func(t *testing.T) {
			parallelHeavy(t)
			interopTorture(t, version)
		})
	}
}

func interopTorture(t *testing.T, version string) {
	cl := sharedCluster(t)
	addrs := cl.Addrs()
	rc := cl.Client(t)
	run := unique("torture")
	names := make([]string, len(tortureKinds))
	for i, k := range tortureKinds {
		names[i] = run + ":" + k
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, n := range names {
			for _, k := range []string{gaugeKey(n), holderKey(n), keys.Prefix("redisson_lock_token", n)} {
				rc.Do(ctx, rc.B().Del().Key(k).Build())
			}
		}
	})
	slots := map[string]bool{}
	for _, n := range names {
		slots[cl.NodeForKey(n).Addr()] = true
	}
	t.Logf("locks %v (kinds %v) on %d of %d masters", names, tortureKinds, len(slots), len(addrs))

	// Start everything, then let everyone go at once.
	dir := t.TempDir()
	outs := make([]string, tortureGoProcs)
	workers := make([]*worker, tortureGoProcs)
	for i := range workers {
		outs[i] = filepath.Join(dir, fmt.Sprintf("go%d.txt", i))
		w, cleanup, err := startWorker(modeTorture, map[string]string{
			envAddrs:      strings.Join(addrs, ","),
			envNames:      strings.Join(names, ","),
			envGoroutines: strconv.Itoa(tortureWorkers),
			envIterations: strconv.Itoa(tortureIters),
			envTortureOut: outs[i],
		})
		require.NoError(t, err)
		t.Cleanup(cleanup)
		workers[i] = w
	}
	p := startJavaPeer(t, version, addrs)
	threads := make([]int, tortureWorkers)
	for i := range threads {
		threads[i] = i + 1
		p.Owner(t, threads[i]) // creates the Java thread
	}
	for i, w := range workers {
		l, err := w.line(time.Minute)
		require.NoError(t, err, "worker %d", i)
		require.Equal(t, "ready", l)
	}

	ctx := testCtx(t, 3*time.Minute)
	start := time.Now()
	for _, w := range workers {
		require.NoError(t, w.send("go"))
	}
	var (
		wg          sync.WaitGroup
		mu          sync.Mutex
		javaRecords []holdRecord
		violations  []string
		javaErrs    []error
	)
	call := func(req peerReq) (peerReply, error) {
		select {
		case r := <-p.Start(t, req):
			if !r.OK {
				return r, fmt.Errorf("java %s %s (thread %d): %s", req.Op, req.Name, req.Thread, r.Err)
			}
			return r, nil
		case <-ctx.Done():
			return peerReply{}, fmt.Errorf("java %s %s (thread %d): %w", req.Op, req.Name, req.Thread, ctx.Err())
		}
	}
	for _, th := range threads {
		wg.Go(func() {
			who := "java." + strconv.Itoa(th)
			rnd := rand.New(rand.NewPCG(uint64(start.UnixNano()), uint64(th)))
			var mine []holdRecord
			var bad []string
			err := func() error {
				for range tortureIters {
					ni := rnd.IntN(len(names))
					kind, name := tortureKinds[ni], names[ni]
					op := "lock"
					if kind == "fenced" {
						op = "lockToken"
					}
					r, err := call(peerReq{Thread: th, Op: op, Kind: kind, Name: name})
					if err != nil {
						return err
					}
					rec := holdRecord{who: who, java: true, name: ni, acq: time.Now().UnixNano()}
					if kind == "fenced" {
						if _, err := fmt.Sscan(string(r.Result), &rec.token); err != nil {
							return fmt.Errorf("lockToken result %s: %w", r.Result, err)
						}
					}
					v, err := tortureGaugeIn(ctx, rc, name, who)
					if err != nil {
						return err
					}
					if v != "" {
						bad = append(bad, v)
					}
					if v, err = tortureGaugeOut(ctx, rc, name, who); err != nil {
						return err
					}
					if v != "" {
						bad = append(bad, v)
					}
					rec.rel = time.Now().UnixNano()
					if _, err := call(peerReq{Thread: th, Op: "unlock", Kind: kind, Name: name}); err != nil {
						return err
					}
					mine = append(mine, rec)
				}
				return nil
			}()
			mu.Lock()
			defer mu.Unlock()
			javaRecords = append(javaRecords, mine...)
			violations = append(violations, bad...)
			if err != nil {
				javaErrs = append(javaErrs, fmt.Errorf("%s: %w", who, err))
			}
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(javaErrs...))

	all := javaRecords
	for i, w := range workers {
		l, err := w.line(workerTimeout)
		require.NoError(t, err, "worker %d", i)
		var n, bad int
		_, err = fmt.Sscanf(l, "done %d %d", &n, &bad)
		require.NoError(t, err, "worker %d wrote %q", i, l)
		assert.Equal(t, tortureWorkers*tortureIters, n, "worker %d acquisitions", i)
		if bad > 0 {
			violations = append(violations, fmt.Sprintf("worker %d reported %d violations; stderr:\n%s", i, bad, w.stderr))
		}
		recs, err := readHoldRecords(outs[i])
		require.NoError(t, err)
		all = append(all, recs...)
	}
	elapsed := time.Since(start)
	for i, w := range workers {
		require.NoError(t, w.send("exit"))
		require.NoError(t, w.wait(30*time.Second), "worker %d", i)
	}
	t.Logf("Redisson %s, cluster: %d Go processes x %d goroutines + 1 JVM x %d threads, %d acquisitions over %d locks in %v (%.0f/s)",
		version, tortureGoProcs, tortureWorkers, tortureWorkers, len(all), len(names), elapsed.Round(time.Millisecond),
		float64(len(all))/elapsed.Seconds())
	if elapsed > tortureBudget {
		t.Logf("NOTE: slower than the %v budget", tortureBudget)
	}

	assert.Empty(t, violations, "gauge above 1")
	assert.Len(t, all, tortureTotal)
	for _, n := range names {
		g, err := rc.Do(ctx, rc.B().Get().Key(gaugeKey(n)).Build()).ToString()
		require.NoError(t, err)
		assert.Equal(t, "0", g, "gauge of %s", n)
		ex, err := rc.Do(ctx, rc.B().Exists().Key(n).Build()).AsInt64()
		require.NoError(t, err)
		assert.Zero(t, ex, "lock %s left behind", n)
	}
	tortureAnalyse(t, version, names, all)
}

// tortureAnalyse checks the records of every lock for overlapping holds and
// fencing-token order, and reports hand-off latency by direction.
func tortureAnalyse(t *testing.T, version string, names []string, all []holdRecord) {
	t.Helper()
	side := func(r holdRecord) string {
		if r.java {
			return "Java"
		}
		return "Go"
	}
	latencies := map[string][]time.Duration{}
	perLock := map[string][]time.Duration{}
	counts := map[string]int{}
	for ni, name := range names {
		var recs []holdRecord
		for _, r := range all {
			if r.name == ni {
				recs = append(recs, r)
			}
		}
		slices.SortFunc(recs, func(a, b holdRecord) int { return int(a.acq - b.acq) })
		overlaps := 0
		for i, r := range recs {
			counts[tortureKinds[ni]+"/"+side(r)]++
			if i == 0 {
				continue
			}
			prev := recs[i-1]
			if r.acq < prev.rel {
				overlaps++
				if overlaps <= 5 {
					t.Errorf("%s: %s acquired at %d before %s released at %d", name, r.who, r.acq, prev.who, prev.rel)
				}
			}
			if tortureKinds[ni] == "fenced" && r.token <= prev.token {
				t.Errorf("%s: %s got token %d after %s's %d", name, r.who, r.token, prev.who, prev.token)
			}
			d := time.Duration(r.acq - prev.rel)
			dir := side(prev) + "->" + side(r)
			latencies[dir] = append(latencies[dir], d)
			perLock[tortureKinds[ni]] = append(perLock[tortureKinds[ni]], d)
		}
		assert.Zero(t, overlaps, "%s: overlapping holds", name)
	}
	t.Logf("Redisson %s: acquisitions by lock/side: %v", version, counts)
	for _, dir := range []string{"Go->Java", "Java->Go", "Go->Go", "Java->Java"} {
		t.Logf("Redisson %s: hand-off %-10s %s", version, dir, latencySummary(latencies[dir]))
		assert.NotEmpty(t, latencies[dir], "no %s hand-off at all", dir)
	}
	for _, k := range tortureKinds {
		t.Logf("Redisson %s: hand-off on the %-9s lock %s", version, k, latencySummary(perLock[k]))
	}
}

// latencySummary formats count and percentiles of ds.
func latencySummary(ds []time.Duration) string {
	if len(ds) == 0 {
		return "n=0"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	q := func(p float64) time.Duration {
		return s[min(len(s)-1, int(p*float64(len(s))))].Round(10 * time.Microsecond)
	}
	return fmt.Sprintf("n=%4d p50=%-9v p90=%-9v p99=%-9v max=%v", len(s), q(0.5), q(0.9), q(0.99), s[len(s)-1].Round(10*time.Microsecond))
}
