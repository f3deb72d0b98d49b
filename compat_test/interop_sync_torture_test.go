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
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/semaphore"
)

// Mixed-fleet torture of RSemaphore, for every peer version, on the shared
// standalone server and on the shared cluster: two Go worker processes and
// one Redisson JVM, eight workers each, share a semaphore of four permits,
// at least 2,000 acquisitions in all (240 with -short). Every fifth
// acquisition of a worker takes two permits, the others one. Inside each
// hold the holder adds its permits to a gauge in the semaphore's slot
// (INCRBY after the acquire returned, DECRBY before the release is sent; for
// Java holds the parent does it between the peer's replies), so the gauge
// never counts more than is held: it must never exceed four. The holds are
// also recorded with wall-clock timestamps from this one machine, and at no
// instant may they add up to more than four permits.
//
//	go test -count=1 -run 'TestInteropSyncTorture' -v ./compat_test/

const (
	semTortureGoProcs = 2
	semTortureWorkers = 8 // per Go process, and Java threads
	semTorturePermits = 4
	semTortureTotal   = 2000
	semTortureShort   = 240
	semTortureDouble  = 5 // every semTortureDouble-th acquisition takes 2 permits
	// semTortureBudget is the wall time one run should stay under;
	// exceeding it is logged, not failed.
	semTortureBudget = 30 * time.Second

	modeSemTorture = "interop-sync-torture"
)

// The worker processes of this torture are the test binary re-executed
// with envWorker set to modeSemTorture. runWorker (workers_test.go) knows
// only the lock modes, so this hook claims the mode before TestMain runs.
func init() {
	if os.Getenv(envWorker) == modeSemTorture {
		if err := semTortureWorker(); err != nil {
			fmt.Fprintf(os.Stderr, "worker %s (pid %d): %v\n", modeSemTorture, os.Getpid(), err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// permitHold is one acquisition of the torture's semaphore.
type permitHold struct {
	who        string // "go<pid>.<goroutine>" or "java.<thread>"
	java       bool
	permits    int
	start, acq int64 // unix nanoseconds: before the acquire call; when it returned
	rel        int64 // just before the release was sent
	gauge      int64 // the gauge on entry, this hold's permits included
}

// semTorturePermitsFor is how many permits the i-th acquisition of a
// worker takes.
func semTorturePermitsFor(i int) int {
	if i%semTortureDouble == semTortureDouble-1 {
		return 2
	}
	return 1
}

// semGaugeIn adds k to the gauge of name and returns the new value, with a
// violation when it is above the permits.
func semGaugeIn(ctx context.Context, rc rueidis.Client, name, who string, k int) (int64, string, error) {
	v, err := rc.Do(ctx, rc.B().Incrby().Key(gaugeKey(name)).Increment(int64(k)).Build()).AsInt64()
	if err != nil {
		return 0, "", err
	}
	if v > semTorturePermits {
		return v, fmt.Sprintf("%s entered with %d permits and the gauge at %d", who, k, v), nil
	}
	return v, "", nil
}

// semGaugeOut takes k off the gauge; it must not go below 0.
func semGaugeOut(ctx context.Context, rc rueidis.Client, name, who string, k int) (string, error) {
	v, err := rc.Do(ctx, rc.B().Decrby().Key(gaugeKey(name)).Decrement(int64(k)).Build()).AsInt64()
	if err != nil {
		return "", err
	}
	if v < 0 {
		return fmt.Sprintf("%s left with %d permits and the gauge at %d", who, k, v), nil
	}
	return "", nil
}

// semTortureWork is the hold's "work": up to 300µs.
func semTortureWork(rnd *rand.Rand) { time.Sleep(time.Duration(rnd.IntN(300)) * time.Microsecond) }

// semTortureWorker: "ready" → (go) → goroutines acquire and release the
// semaphore → holds written to the file named by envTortureOut → "done
// <acquisitions> <violations>" → (exit).
func semTortureWorker() error {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: strings.Split(os.Getenv(envAddrs), ",")})
	if err != nil {
		return err
	}
	defer rc.Close()
	name := os.Getenv(envNames)
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
	s := semaphore.New(c, name)
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
		holds      []permitHold
		violations []string
		errs       []error
	)
	for g := range goroutines {
		wg.Go(func() {
			who := fmt.Sprintf("go%d.%d", os.Getpid(), g)
			rnd := rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(g)))
			var mine []permitHold
			var bad []string
			err := func() error {
				for i := range iterations {
					k := semTorturePermitsFor(i + g)
					h := permitHold{who: who, permits: k, start: time.Now().UnixNano()}
					if err := s.Acquire(ctx, k); err != nil {
						return fmt.Errorf("acquire %d: %w", k, err)
					}
					h.acq = time.Now().UnixNano()
					v, why, err := semGaugeIn(ctx, rc, name, who, k)
					if err != nil {
						return err
					}
					h.gauge = v
					if why != "" {
						bad = append(bad, why)
					}
					semTortureWork(rnd)
					if why, err = semGaugeOut(ctx, rc, name, who, k); err != nil {
						return err
					}
					if why != "" {
						bad = append(bad, why)
					}
					h.rel = time.Now().UnixNano()
					if err := s.Release(ctx, k); err != nil {
						return fmt.Errorf("release %d: %w", k, err)
					}
					mine = append(mine, h)
				}
				return nil
			}()
			mu.Lock()
			defer mu.Unlock()
			holds = append(holds, mine...)
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
	for _, h := range holds {
		fmt.Fprintf(&b, "%s %d %d %d %d %d\n", h.who, h.permits, h.start, h.acq, h.rel, h.gauge)
	}
	if err := os.WriteFile(os.Getenv(envTortureOut), []byte(b.String()), 0o644); err != nil {
		return err
	}
	fmt.Printf("done %d %d\n", len(holds), len(violations))
	return expectLine(stdin, "exit")
}

// readPermitHolds parses a worker's holds file.
func readPermitHolds(path string) ([]permitHold, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []permitHold
	for line := range strings.Lines(string(data)) {
		var h permitHold
		if _, err := fmt.Sscanf(line, "%s %d %d %d %d %d", &h.who, &h.permits, &h.start, &h.acq, &h.rel, &h.gauge); err != nil {
			return nil, fmt.Errorf("%s: line %q: %w", path, line, err)
		}
		out = append(out, h)
	}
	return out, nil
}

func TestInteropSyncTorture(t *testing.T) {
	t.Parallel()
	total := semTortureTotal
	if testing.Short() {
		total = semTortureShort
	}
	for _, version := range peerVersions {
		for _, topology := range []string{"standalone", "cluster"} {
			t.Run(version+"/"+topology, func(t *testing.T) {
				parallelHeavy(t)
				semTorture(t, version, topology, total)
			})
		}
	}
}

func semTorture(t *testing.T, version, topology string, total int) {
	var (
		addrs []string
		rc    rueidis.Client
	)
	switch topology {
	case "standalone":
		addrs = []string{standaloneAddr}
		rc = redistest.NewClient(t, standaloneAddr)
	default:
		cl := sharedCluster(t)
		addrs = cl.Addrs()
		rc = cl.Client(t)
	}
	procs := semTortureGoProcs + 1
	iters := (total + procs*semTortureWorkers - 1) / (procs * semTortureWorkers)
	name := unique("sync-torture")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, k := range []string{name, gaugeKey(name)} {
			rc.Do(ctx, rc.B().Del().Key(k).Build())
		}
	})

	dir := t.TempDir()
	outs := make([]string, semTortureGoProcs)
	workers := make([]*worker, semTortureGoProcs)
	for i := range workers {
		outs[i] = filepath.Join(dir, fmt.Sprintf("go%d.txt", i))
		w, cleanup, err := startWorker(modeSemTorture, map[string]string{
			envAddrs:      strings.Join(addrs, ","),
			envNames:      name,
			envGoroutines: strconv.Itoa(semTortureWorkers),
			envIterations: strconv.Itoa(iters),
			envTortureOut: outs[i],
		})
		require.NoError(t, err)
		t.Cleanup(cleanup)
		workers[i] = w
	}
	p := startJavaPeer(t, version, addrs)
	threads := make([]int, semTortureWorkers)
	for i := range threads {
		threads[i] = i + 1
		p.Owner(t, threads[i]) // creates the Java thread
	}
	require.True(t, p.Do(t, jsem(1, "trySetPermits", name, semTorturePermits)).Bool(t), "Java trySetPermits(%d)", semTorturePermits)
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
		wg         sync.WaitGroup
		mu         sync.Mutex
		all        []permitHold
		violations []string
		javaErrs   []error
	)
	call := func(req peerReq) error {
		select {
		case r := <-p.Start(t, req):
			if !r.OK {
				return fmt.Errorf("java %s %d (thread %d): %s", req.Op, req.Permits, req.Thread, r.Err)
			}
			return nil
		case <-ctx.Done():
			return fmt.Errorf("java %s %d (thread %d): %w", req.Op, req.Permits, req.Thread, ctx.Err())
		}
	}
	for _, th := range threads {
		wg.Go(func() {
			who := "java." + strconv.Itoa(th)
			rnd := rand.New(rand.NewPCG(uint64(start.UnixNano()), uint64(th)))
			var mine []permitHold
			var bad []string
			err := func() error {
				for i := range iters {
					k := semTorturePermitsFor(i + th)
					h := permitHold{who: who, java: true, permits: k, start: time.Now().UnixNano()}
					if err := call(jsem(th, "acquire", name, k)); err != nil {
						return err
					}
					h.acq = time.Now().UnixNano()
					v, why, err := semGaugeIn(ctx, rc, name, who, k)
					if err != nil {
						return err
					}
					h.gauge = v
					if why != "" {
						bad = append(bad, why)
					}
					semTortureWork(rnd)
					if why, err = semGaugeOut(ctx, rc, name, who, k); err != nil {
						return err
					}
					if why != "" {
						bad = append(bad, why)
					}
					h.rel = time.Now().UnixNano()
					if err := call(jsem(th, "release", name, k)); err != nil {
						return err
					}
					mine = append(mine, h)
				}
				return nil
			}()
			mu.Lock()
			defer mu.Unlock()
			all = append(all, mine...)
			violations = append(violations, bad...)
			if err != nil {
				javaErrs = append(javaErrs, fmt.Errorf("%s: %w", who, err))
			}
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(javaErrs...))
	for i, w := range workers {
		l, err := w.line(workerTimeout)
		require.NoError(t, err, "worker %d", i)
		var n, bad int
		_, err = fmt.Sscanf(l, "done %d %d", &n, &bad)
		require.NoError(t, err, "worker %d wrote %q", i, l)
		assert.Equal(t, semTortureWorkers*iters, n, "worker %d acquisitions", i)
		if bad > 0 {
			violations = append(violations, fmt.Sprintf("worker %d reported %d violations; stderr:\n%s", i, bad, w.stderr))
		}
		holds, err := readPermitHolds(outs[i])
		require.NoError(t, err)
		all = append(all, holds...)
	}
	elapsed := time.Since(start)
	for i, w := range workers {
		require.NoError(t, w.send("exit"))
		require.NoError(t, w.wait(30*time.Second), "worker %d", i)
	}

	t.Logf("Redisson %s, %s: %d Go processes x %d goroutines + 1 JVM x %d threads on %d permits, %d acquisitions in %v (%.0f/s)",
		version, topology, semTortureGoProcs, semTortureWorkers, semTortureWorkers, semTorturePermits,
		len(all), elapsed.Round(time.Millisecond), float64(len(all))/elapsed.Seconds())
	if elapsed > semTortureBudget {
		t.Logf("NOTE: slower than the %v budget", semTortureBudget)
	}
	assert.Empty(t, violations, "gauge above %d or below 0", semTorturePermits)
	assert.Len(t, all, procs*semTortureWorkers*iters)
	assert.GreaterOrEqual(t, len(all), total)
	g, err := rc.Do(ctx, rc.B().Get().Key(gaugeKey(name)).Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "0", g, "gauge at the end")
	free, err := rc.Do(ctx, rc.B().Get().Key(name).Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, strconv.Itoa(semTorturePermits), free, "free permits at the end")
	semTortureAnalyse(t, version+"/"+topology, all)
}

// semTortureAnalyse checks that the recorded holds never add up to more
// than the permits at any instant, and reports the gauge, the occupancy and
// the acquire latency by side.
func semTortureAnalyse(t *testing.T, label string, all []permitHold) {
	t.Helper()
	side := func(h permitHold) string {
		if h.java {
			return "Java"
		}
		return "Go"
	}
	type event struct {
		at    int64
		delta int
	}
	events := make([]event, 0, 2*len(all))
	var maxGauge int64
	gauges := map[string][]int{} // side -> count of holds by gauge on entry
	waits := map[string][]time.Duration{}
	counts := map[string]int{}
	for _, h := range all {
		events = append(events, event{h.acq, h.permits}, event{h.rel, -h.permits})
		maxGauge = max(maxGauge, h.gauge)
		s := side(h)
		if gauges[s] == nil {
			gauges[s] = make([]int, semTorturePermits+1)
		}
		gauges[s][min(max(h.gauge, 0), semTorturePermits)]++
		sk := fmt.Sprintf("%s/%d", s, h.permits)
		waits[sk] = append(waits[sk], time.Duration(h.acq-h.start))
		counts[sk]++
	}
	// Releases before acquisitions at the same instant.
	slices.SortFunc(events, func(a, b event) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return a.delta - b.delta
	})
	held, peak, over := 0, 0, 0
	for _, ev := range events {
		held += ev.delta
		peak = max(peak, held)
		if held > semTorturePermits {
			over++
		}
	}
	t.Logf("%s: acquisitions by side/permits %v; max gauge %d; peak permits held by the timestamps %d",
		label, counts, maxGauge, peak)
	for _, s := range []string{"Go", "Java"} {
		t.Logf("%s: %-4s holds by gauge on entry (1..%d) %v", label, s, semTorturePermits, gauges[s][1:])
		for k := 1; k <= 2; k++ {
			t.Logf("%s: %-4s acquire(%d) wait %s", label, s, k, latencySummary(waits[fmt.Sprintf("%s/%d", s, k)]))
		}
	}
	assert.LessOrEqual(t, maxGauge, int64(semTorturePermits), "max gauge")
	assert.Zero(t, over, "instants at which the recorded holds exceed %d permits (peak %d)", semTorturePermits, peak)
	if testing.Short() {
		return
	}
	// A full run must have filled the semaphore, from both sides.
	assert.Equal(t, int64(semTorturePermits), maxGauge, "the gauge never reached %d: the semaphore was never full", semTorturePermits)
	for _, s := range []string{"Go", "Java"} {
		assert.NotZero(t, gauges[s][semTorturePermits], "no %s hold entered a full semaphore", s)
	}
}
