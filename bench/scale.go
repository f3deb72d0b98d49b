package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/rlock"
)

// The scale scenarios: watchdog renewal of many held locks, and many
// goroutines waiting on a few locks, on a 3-master cluster this file starts
// itself (scale_cluster.go). Each prints its own Markdown section.
//
//	renewal   10,000 and 100,000 interlock watchdog locks, then the Redisson
//	          peer holding 10,000: calls, EVALSHA and tick time per tick,
//	          heap per lock, goroutines
//	waiting   10,000 goroutines waiting on 1,000 locks: subscription
//	          connections per node, heap per waiter, release to last wake-up

// scaleConfig are the knobs of the scale scenarios.
type scaleConfig struct {
	RenewalRuns []renewalRun  // interlock runs: locks held, watchdog
	JavaCount   int           // locks the Redisson peer holds (0: skip Java)
	Watchdog    time.Duration // lease of the renewal runs; ticks every third of it
	Ticks       int           // ticks measured per run
	Waiters     int
	WaitLocks   int
}

func defaultScaleConfig() scaleConfig {
	return scaleConfig{
		RenewalRuns: []renewalRun{{10000, 0}, {100000, 0}},
		JavaCount:   10000,
		Watchdog:    3 * time.Second,
		Ticks:       5,
		Waiters:     10000,
		WaitLocks:   1000,
	}
}

// isScaleScenario reports whether name is one of this file's scenarios.
func isScaleScenario(name string) bool { return name == "renewal" || name == "waiting" }

// runScaleScenarios starts a cluster, runs the named scale scenarios on it
// and writes their tables to w.
func runScaleScenarios(ctx context.Context, names []string, cfg scaleConfig, w io.Writer) error {
	cl, err := startScaleCluster(ctx)
	if err != nil {
		return fmt.Errorf("starting the 3-master cluster: %w", err)
	}
	defer cl.stop()
	fmt.Fprintf(w, "\n## Scale (3-master cluster %s, Redis %s, %s, GOMAXPROCS %d)\n",
		strings.Join(cl.addrs, " "), redisVersion(ctx, cl), runtime.Version(), runtime.GOMAXPROCS(0))
	for _, n := range names {
		switch n {
		case "renewal":
			if err := runRenewalScale(ctx, cl, cfg, w); err != nil {
				return fmt.Errorf("renewal: %w", err)
			}
		case "waiting":
			if err := runWaitingScale(ctx, cl, cfg, w); err != nil {
				return fmt.Errorf("waiting: %w", err)
			}
		default:
			return fmt.Errorf("unknown scale scenario %q", n)
		}
	}
	return nil
}

func redisVersion(ctx context.Context, cl *scaleCluster) string {
	nc := cl.nodes[0]
	info, err := nc.Do(ctx, nc.B().Info().Section("server").Build()).ToString()
	if err != nil {
		return "?"
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v
		}
	}
	return "?"
}

// tickClient is a rueidis.Client that times every DoMulti: while locks are
// only held, the renewal tick is the one caller of DoMulti.
type tickClient struct {
	rueidis.Client
	calls atomic.Int64
	ticks chan tickEvent
}

type tickEvent struct {
	cmds int
	took time.Duration
}

func (c *tickClient) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	start := time.Now()
	r := c.Client.DoMulti(ctx, cmds...)
	c.calls.Add(1)
	select {
	case c.ticks <- tickEvent{len(cmds), time.Since(start)}:
	default:
	}
	return r
}

// nextTick waits for the next DoMulti of at least min commands.
func (c *tickClient) nextTick(ctx context.Context, minCmds int, timeout time.Duration) (tickEvent, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case e := <-c.ticks:
			if e.cmds >= minCmds {
				return e, nil
			}
		case <-t.C:
			return tickEvent{}, fmt.Errorf("no renewal tick within %v", timeout)
		case <-ctx.Done():
			return tickEvent{}, ctx.Err()
		}
	}
}

// memNow returns heap and stack in use after two GCs (the second empties
// sync.Pool victim caches).
func memNow() (heap, stack uint64) {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc, m.StackInuse
}

// allCommandStats sums INFO commandstats calls over the nodes.
func allCommandStats(ctx context.Context, cl *scaleCluster) (map[string]int64, error) {
	out := map[string]int64{}
	for i := range cl.nodes {
		st, err := cl.commandStats(ctx, i)
		if err != nil {
			return nil, err
		}
		for k, v := range st {
			out[k] += v[0]
		}
	}
	return out, nil
}

// commandMix describes calls per tick by command, the INFO commands of the
// measurement itself left out.
func commandMix(before, after map[string]int64, ticks int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(after)) {
		d := after[k] - before[k]
		if d <= 0 || k == "info" || k == "client|list" || k == "monitor" || k == "ping" {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.1f", strings.ToUpper(k), float64(d)/float64(ticks)))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// renewalRow is one column of the renewal table.
type renewalRow struct {
	label        string
	locks        int
	slots        int
	acquire      time.Duration
	heapPerLock  string
	goroutines   string
	callsPerTick string
	evalsPerTick float64
	perNode      []float64
	bound        int
	tickClient   string // client-side DoMulti time, p50 / max
	tickCPU      string // the process's CPU time per tick
	tickServer   string // MONITOR: first to last script call, p50 / max
	monitorCalls string // script calls per MONITOR burst
	serverUsec   float64
	mix          string
	losses       string
}

// renewalRun is one interlock column: locks held, and its watchdog (0: the
// scenario's).
type renewalRun struct {
	locks    int
	watchdog time.Duration
}

func runRenewalScale(ctx context.Context, cl *scaleCluster, cfg scaleConfig, w io.Writer) error {
	var rows []renewalRow
	for _, run := range cfg.RenewalRuns {
		rcfg := cfg
		if run.watchdog > 0 {
			rcfg.Watchdog = run.watchdog
		}
		r, err := renewalInterlock(ctx, cl, rcfg, run.locks)
		if err != nil {
			return fmt.Errorf("interlock, %d locks: %w", run.locks, err)
		}
		rows = append(rows, r)
		if err := flushCluster(ctx, cl); err != nil {
			return err
		}
	}
	var javaErr error
	if cfg.JavaCount > 0 {
		r, err := renewalJava(ctx, cl, cfg, cfg.JavaCount)
		if err != nil {
			javaErr = err
		} else {
			rows = append(rows, r)
		}
		if err := flushCluster(ctx, cl); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "\n### Renewal: watchdog locks held on the 3-master cluster (watchdog %v unless a column says otherwise, a tick every third of it; %d ticks measured)\n\n",
		cfg.Watchdog, cfg.Ticks)
	fmt.Fprintf(w, "Target: one pipelined round trip per node per tick, < 1 KiB heap per held lock.\n\n")
	fmt.Fprint(w, "| |")
	for _, r := range rows {
		fmt.Fprintf(w, " %s |", r.label)
	}
	fmt.Fprint(w, "\n|---|")
	for range rows {
		fmt.Fprint(w, "---|")
	}
	fmt.Fprintln(w)
	line := func(name string, f func(r renewalRow) string) {
		fmt.Fprintf(w, "| %s |", name)
		for _, r := range rows {
			fmt.Fprintf(w, " %s |", f(r))
		}
		fmt.Fprintln(w)
	}
	line("Locks held (slots)", func(r renewalRow) string { return fmt.Sprintf("%s (%s)", thousands(r.locks), thousands(r.slots)) })
	line("Time to acquire them all", func(r renewalRow) string { return r.acquire.Round(time.Millisecond).String() })
	line("Client calls per tick (round trips)", func(r renewalRow) string { return r.callsPerTick })
	line("Script calls per lease/3 interval (INFO commandstats)", func(r renewalRow) string {
		return fmt.Sprintf("%s (bound Σ⌈locks/slot ÷ 100⌉ = %s)", thousands(int(r.evalsPerTick+0.5)), thousands(r.bound))
	})
	line("… per node", func(r renewalRow) string {
		var s []string
		for _, v := range r.perNode {
			s = append(s, thousands(int(v+0.5)))
		}
		return strings.Join(s, " / ")
	})
	line("Commands per lease/3 interval, by type", func(r renewalRow) string { return r.mix })
	line("Tick wall time, client (DoMulti) p50 / max", func(r renewalRow) string { return r.tickClient })
	line("Client CPU per tick (the whole process, user and system)", func(r renewalRow) string { return orNA(r.tickCPU) })
	line("Tick span on the servers (MONITOR) p50 / max", func(r renewalRow) string { return r.tickServer })
	line("Script calls per MONITOR burst", func(r renewalRow) string { return r.monitorCalls })
	line("Server time in scripts per lease/3 interval", func(r renewalRow) string {
		return (time.Duration(r.serverUsec) * time.Microsecond).Round(10 * time.Microsecond).String()
	})
	line("Heap per held lock", func(r renewalRow) string { return r.heapPerLock })
	line("Goroutines added", func(r renewalRow) string { return r.goroutines })
	line("Renewal failures / locks lost (whole run)", func(r renewalRow) string { return r.losses })
	if javaErr != nil {
		fmt.Fprintf(w, "\nRedisson peer column missing: %v\n", javaErr)
	} else if cfg.JavaCount > 0 {
		fmt.Fprintf(w, "\nThe commandstats rows count per lease/3 interval. interlock ticks exactly once per interval;\n"+
			"Redisson schedules its next renewal only when the previous batch has completed, so it ticks less\n"+
			"often, and its calls per tick are the MONITOR burst row.\n")
	}
	return nil
}

func flushCluster(ctx context.Context, cl *scaleCluster) error {
	for _, nc := range cl.nodes {
		if err := nc.Do(ctx, nc.B().Flushall().Build()).Error(); err != nil {
			return err
		}
	}
	return nil
}

func renewalInterlock(ctx context.Context, cl *scaleCluster, cfg scaleConfig, n int) (renewalRow, error) {
	row := renewalRow{label: "interlock, " + thousands(n) + " locks, watchdog " + cfg.Watchdog.String(), locks: n}
	names := make([]string, n)
	perSlot := map[uint16]int{}
	for i := range names {
		names[i] = "bench:renew:" + strconv.Itoa(i)
		perSlot[keySlot(names[i])]++
	}
	row.slots = len(perSlot)
	for _, c := range perSlot {
		row.bound += (c + 99) / 100
	}

	rc, err := cl.client()
	if err != nil {
		return row, err
	}
	defer rc.Close()
	tc := &tickClient{Client: rc, ticks: make(chan tickEvent, 64)}
	mode, err := autoPubSubMode(ctx, rc) // the one probe Lock would send
	if err != nil {
		return row, err
	}
	obs := &scaleObserver{}
	ic, err := interlock.New(tc, interlock.WithWatchdogTimeout(cfg.Watchdog), interlock.WithObserver(obs), interlock.WithPubSubMode(mode))
	if err != nil {
		return row, err
	}
	defer ic.Close()

	heap0, _ := memNow()
	g0 := runtime.NumGoroutine()
	start := time.Now()
	if err := parallelEach(ctx, names, 32, func(ctx context.Context, name string) error {
		return rlock.New(ic, name).Lock(ctx)
	}, true); err != nil {
		return row, err
	}
	row.acquire = time.Since(start)
	heap1, _ := memNow()
	row.heapPerLock = fmt.Sprintf("%.0f B", float64(int64(heap1)-int64(heap0))/float64(n))
	row.goroutines = strconv.Itoa(runtime.NumGoroutine() - g0)

	// The first tick loads the renewal script (EVALSHA, NOSCRIPT, EVAL);
	// measure from the end of the second.
	tickWait := 3 * cfg.Watchdog
	for range 2 {
		if _, err := tc.nextTick(ctx, n/100, tickWait); err != nil {
			return row, err
		}
	}
	time.Sleep(50 * time.Millisecond) // a NOSCRIPT fallback, if any, ends
	for len(tc.ticks) > 0 {
		<-tc.ticks
	}
	s0, err := cl.evalStats(ctx)
	if err != nil {
		return row, err
	}
	m0, err := allCommandStats(ctx, cl)
	if err != nil {
		return row, err
	}
	c0, cpu0 := tc.calls.Load(), processCPU()
	var took []time.Duration
	for range cfg.Ticks {
		e, err := tc.nextTick(ctx, 1, tickWait)
		if err != nil {
			return row, err
		}
		took = append(took, e.took)
	}
	c1, cpu1 := tc.calls.Load(), processCPU()
	s1, err := cl.evalStats(ctx)
	if err != nil {
		return row, err
	}
	m1, err := allCommandStats(ctx, cl)
	if err != nil {
		return row, err
	}
	row.callsPerTick = fmt.Sprintf("%.1f DoMulti, pipelined to each of 3 nodes", float64(c1-c0)/float64(cfg.Ticks))
	fillEvalStats(&row, s0, s1, cfg.Ticks)
	row.mix = commandMix(m0, m1, cfg.Ticks)
	slices.Sort(took)
	row.tickClient = fmt.Sprintf("%v / %v", took[len(took)/2].Round(100*time.Microsecond), took[len(took)-1].Round(100*time.Microsecond))
	row.tickCPU = ((cpu1 - cpu0) / time.Duration(cfg.Ticks)).Round(100 * time.Microsecond).String()

	// Server-side span: MONITOR from the end of one tick to the end of the
	// third after it.
	mon, err := startEvalMonitor(cl.addrs)
	if err != nil {
		return row, err
	}
	for range 3 {
		if _, err := tc.nextTick(ctx, 1, tickWait); err != nil {
			mon.stop()
			return row, err
		}
	}
	fillMonitor(&row, mon.stop())
	row.losses = fmt.Sprintf("%d / %d (%s still held)", obs.failed.Load(), obs.lost.Load(), thousands(ic.Stats().Holds))
	if obs.failed.Load() > 0 || obs.lost.Load() > 0 {
		fmt.Fprintf(os.Stderr, "lockbench: renewal, %d locks, watchdog %v: %s\n", n, cfg.Watchdog, obs)
	}
	return row, nil
}

// autoPubSubMode is the mode PubSubAuto settles on for rc: sharded on a
// cluster whose nodes answer PUBSUB SHARDNUMSUB. Passing it to New keeps
// the Client's probe out of what is measured.
func autoPubSubMode(ctx context.Context, rc rueidis.Client) (interlock.PubSubMode, error) {
	if rc.Mode() != rueidis.ClientModeCluster {
		return interlock.PubSubClassic, nil
	}
	err := rc.Do(ctx, rc.B().PubsubShardnumsub().Channel("0").Build()).Error()
	if err == nil {
		return interlock.PubSubSharded, nil
	}
	if _, isRedisErr := rueidis.IsRedisErr(err); isRedisErr {
		return interlock.PubSubClassic, nil
	}
	return 0, err
}

// scaleObserver counts renewal failures and lost locks, and notes the
// first failures of any kind.
type scaleObserver struct {
	failed, lost atomic.Int64
	mu           sync.Mutex
	first        []string
}

func (o *scaleObserver) note(s string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.first) < 3 {
		o.first = append(o.first, s)
	}
}

func (o *scaleObserver) Observe(_ context.Context, e interlock.Event) {
	switch {
	case e.Op == interlock.OpRenew && e.Failures > 0:
		o.failed.Add(int64(e.Failures))
		o.note(fmt.Sprintf("renewal of %d failed: %v", e.Failures, e.Err))
	case e.Op == interlock.OpLost:
		o.lost.Add(1)
		o.note(fmt.Sprintf("lost %s: %v", e.Name, e.Err))
	case e.Op == interlock.OpPubSub && e.Outcome == interlock.OutcomeError:
		o.note(fmt.Sprintf("pub/sub: %v", e.Err))
	}
}

func (o *scaleObserver) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return fmt.Sprintf("%d renewal failures, %d locks lost; first: %s", o.failed.Load(), o.lost.Load(), strings.Join(o.first, "; "))
}

func fillEvalStats(row *renewalRow, s0, s1 evalStats, ticks int) {
	var total float64
	var usec int64
	for i := range s1.evalsha {
		d := float64(s1.evalsha[i]-s0.evalsha[i]+s1.eval[i]-s0.eval[i]) / float64(ticks)
		row.perNode = append(row.perNode, d)
		total += d
		usec += s1.usec[i] - s0.usec[i]
	}
	row.evalsPerTick = total
	row.serverUsec = float64(usec) / float64(ticks)
}

func fillMonitor(row *renewalRow, bs []evalBurst) {
	if len(bs) == 0 {
		row.tickServer, row.monitorCalls = "none seen", "0"
		return
	}
	var spans []time.Duration
	var calls []string
	for _, b := range bs {
		spans = append(spans, b.span)
		calls = append(calls, thousands(b.calls))
	}
	slices.Sort(spans)
	row.tickServer = fmt.Sprintf("%v / %v", spans[len(spans)/2].Round(100*time.Microsecond), spans[len(spans)-1].Round(100*time.Microsecond))
	row.monitorCalls = strings.Join(calls, ", ")
}

// renewalJava has the Redisson peer hold n watchdog locks and measures its
// renewal from the servers' side: commandstats over whole seconds, and
// MONITOR bursts.
func renewalJava(ctx context.Context, cl *scaleCluster, cfg scaleConfig, n int) (renewalRow, error) {
	row := renewalRow{label: "Redisson " + javaPeerVersion + " peer, " + thousands(n) + " locks, watchdog " + cfg.Watchdog.String(),
		locks: n, goroutines: "n/a (JVM)", losses: "n/a"}
	perSlot := map[uint16]int{}
	for i := range n {
		perSlot[keySlot("bench:java:"+strconv.Itoa(i))]++
	}
	row.slots = len(perSlot)
	for _, c := range perSlot {
		row.bound += (c + 99) / 100
	}
	p, err := startJavaPeer(ctx, cl.addrs, true, cfg.Watchdog)
	if err != nil {
		return row, err
	}
	defer p.close()
	var h javaHoldResult
	start := time.Now()
	if err := p.do(map[string]any{"op": "holdMany", "prefix": "bench:java:", "count": n}, &h); err != nil {
		return row, err
	}
	row.acquire = time.Duration(h.Ms * float64(time.Millisecond))
	_ = start
	row.heapPerLock = fmt.Sprintf("%.0f B (JVM heap used after GC)", float64(h.HeapAfter-h.HeapBefore)/float64(n))

	interval := cfg.Watchdog / 3
	time.Sleep(2 * interval) // renewals are under way
	mon, err := startEvalMonitor(cl.addrs)
	if err != nil {
		return row, err
	}
	time.Sleep(3*interval + interval/2)
	bs := mon.stop()
	// Keep whole bursts only: drop one cut by the start or the end of the window.
	if len(bs) > 2 {
		bs = bs[1 : len(bs)-1]
	}
	fillMonitor(&row, bs)

	s0, err := cl.evalStats(ctx)
	if err != nil {
		return row, err
	}
	m0, err := allCommandStats(ctx, cl)
	if err != nil {
		return row, err
	}
	jcpu0, cpuErr := procCPU(p.cmd.Process.Pid)
	time.Sleep(time.Duration(cfg.Ticks) * interval)
	jcpu1, err := procCPU(p.cmd.Process.Pid)
	if cpuErr == nil && err == nil {
		row.tickCPU = ((jcpu1 - jcpu0) / time.Duration(cfg.Ticks)).Round(100 * time.Microsecond).String()
	}
	s1, err := cl.evalStats(ctx)
	if err != nil {
		return row, err
	}
	m1, err := allCommandStats(ctx, cl)
	if err != nil {
		return row, err
	}
	fillEvalStats(&row, s0, s1, cfg.Ticks)
	row.mix = commandMix(m0, m1, cfg.Ticks)
	row.callsPerTick = "n/a (measured on the servers)"
	row.tickClient = "n/a"
	_ = p.do(map[string]any{"op": "releaseMany", "prefix": "bench:java:"}, nil)
	return row, nil
}

// procCPU is process pid's user and system CPU time so far, from
// /proc/<pid>/stat (Linux; clock ticks of 10 ms).
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: count fields
	// after its closing one. utime and stime are fields 14 and 15.
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

// orNA is s, or "n/a" when it is empty.
func orNA(s string) string {
	if s == "" {
		return "n/a"
	}
	return s
}

// parallelEach runs fn over items with workers goroutines; with sameOwner
// every worker acts for its own fresh owner id (a Java thread each).
func parallelEach(ctx context.Context, items []string, workers int, fn func(ctx context.Context, item string) error, ownPerWorker bool) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wctx := ctx
			if ownPerWorker {
				wctx = interlock.WithOwner(ctx, interlock.NewOwnerID())
			}
			for {
				i := int(next.Add(1)) - 1
				if i >= len(items) {
					return
				}
				if err := fn(wctx, items[i]); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// runWaitingScale parks cfg.Waiters goroutines on cfg.WaitLocks locks held
// by one owner, then releases the locks; every waiter unlocks as soon as it
// acquires, so each lock is handed along its queue.
func runWaitingScale(ctx context.Context, cl *scaleCluster, cfg scaleConfig, w io.Writer) error {
	rc, err := cl.client()
	if err != nil {
		return err
	}
	defer rc.Close()
	ic, err := interlock.New(rc) // default 30 s watchdog: no TTL-driven retries while parked
	if err != nil {
		return err
	}
	defer ic.Close()
	names := make([]string, cfg.WaitLocks)
	for i := range names {
		names[i] = "bench:wait:" + strconv.Itoa(i)
	}
	holder := interlock.WithOwner(ctx, interlock.NewOwnerID())
	if err := parallelEach(holder, names, 32, func(ctx context.Context, name string) error {
		return rlock.New(ic, name).Lock(ctx)
	}, false); err != nil {
		return err
	}
	var subsBefore []int
	for i := range cl.nodes {
		_, s, err := cl.pubsubClients(ctx, i)
		if err != nil {
			return err
		}
		subsBefore = append(subsBefore, s)
	}

	heap0, stack0 := memNow()
	g0 := runtime.NumGoroutine()
	unlockStart := make([]atomic.Int64, cfg.WaitLocks)
	firstAcq := make([]atomic.Int64, cfg.WaitLocks)
	var lastAcq atomic.Int64
	var failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	wctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	start := time.Now()
	for i := range cfg.Waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := i % cfg.WaitLocks
			m := rlock.New(ic, names[k])
			if err := m.Lock(wctx); err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err)
				return
			}
			now := time.Now().UnixNano()
			firstAcq[k].CompareAndSwap(0, now)
			for {
				l := lastAcq.Load()
				if now <= l || lastAcq.CompareAndSwap(l, now) {
					break
				}
			}
			if err := m.Unlock(wctx); err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err)
			}
		}()
	}
	// Parked: every channel subscribed and no script calls for half a second.
	var prev int64 = -1
	deadline := time.Now().Add(2 * time.Minute)
	for {
		time.Sleep(500 * time.Millisecond)
		s, err := cl.evalStats(ctx)
		if err != nil {
			return err
		}
		var cur int64
		for i := range s.evalsha {
			cur += s.evalsha[i] + s.eval[i]
		}
		if ic.Stats().Channels == cfg.WaitLocks && cur == prev &&
			runtime.NumGoroutine()-g0 >= cfg.Waiters {
			break
		}
		prev = cur
		if time.Now().After(deadline) {
			return fmt.Errorf("waiters not parked after 2 minutes (%d channels)", ic.Stats().Channels)
		}
	}
	parked := time.Since(start)
	heap1, stack1 := memNow()
	goroutines := runtime.NumGoroutine() - g0
	var typed, subscribed []string
	for i := range cl.nodes {
		t, s, err := cl.pubsubClients(ctx, i)
		if err != nil {
			return err
		}
		typed = append(typed, strconv.Itoa(t))
		subscribed = append(subscribed, strconv.Itoa(s-subsBefore[i]))
	}
	var shardSubs int64
	for _, n := range names {
		v, err := rc.Do(ctx, rc.B().PubsubShardnumsub().Channel(keys.LockChannel(n)).Build()).AsIntMap()
		if err == nil {
			for _, c := range v {
				shardSubs += c
			}
		}
	}

	// Release all locks, 32 at a time, from the holder.
	idx := map[string]int{}
	for i, n := range names {
		idx[n] = i
	}
	t0 := time.Now()
	if err := parallelEach(holder, names, 32, func(ctx context.Context, name string) error {
		unlockStart[idx[name]].Store(time.Now().UnixNano())
		return rlock.New(ic, name).Unlock(ctx)
	}, false); err != nil {
		return err
	}
	released := time.Since(t0)
	wg.Wait()
	if f := failed.Load(); f > 0 {
		return fmt.Errorf("%d waiters failed: %v", f, firstErr.Load())
	}
	var hand []time.Duration
	var lastFirst int64
	for i := range names {
		hand = append(hand, time.Duration(firstAcq[i].Load()-unlockStart[i].Load()))
		lastFirst = max(lastFirst, firstAcq[i].Load())
	}
	sort.Slice(hand, func(a, b int) bool { return hand[a] < hand[b] })
	ms := func(d time.Duration) string { return d.Round(10 * time.Microsecond).String() }

	fmt.Fprintf(w, "\n### Waiting: %s goroutines waiting on %s locks (interlock, one Client, default 30 s watchdog)\n\n",
		thousands(cfg.Waiters), thousands(cfg.WaitLocks))
	fmt.Fprintf(w, "Target: waiters share one subscription connection per node.\n\n")
	fmt.Fprintln(w, "| | |")
	fmt.Fprintln(w, "|---|---|")
	fmt.Fprintf(w, "| Subscription connections per node (CLIENT LIST TYPE pubsub) | %s |\n", strings.Join(typed, " / "))
	fmt.Fprintf(w, "| Connections with a subscription, added by the waiters, per node | %s |\n", strings.Join(subscribed, " / "))
	fmt.Fprintf(w, "| Subscribers per lock channel (Σ PUBSUB SHARDNUMSUB over %s channels) | %s |\n", thousands(cfg.WaitLocks), thousands(int(shardSubs)))
	fmt.Fprintf(w, "| Time for all waiters to park | %s |\n", ms(parked))
	fmt.Fprintf(w, "| Heap per waiter (HeapAlloc) | %.0f B |\n", float64(int64(heap1)-int64(heap0))/float64(cfg.Waiters))
	fmt.Fprintf(w, "| Goroutine stack per waiter (StackInuse) | %.0f B |\n", float64(int64(stack1)-int64(stack0))/float64(cfg.Waiters))
	fmt.Fprintf(w, "| Goroutines added (waiters + library) | %s (%+d beyond the waiters) |\n", thousands(goroutines), goroutines-cfg.Waiters)
	fmt.Fprintf(w, "| Releasing the %s locks (32 unlockers) | %s |\n", thousands(cfg.WaitLocks), ms(released))
	fmt.Fprintf(w, "| Hand-off per lock, unlock sent → first waiter holds it: p50 / p99 / max | %s / %s / %s |\n",
		ms(hand[len(hand)/2]), ms(hand[len(hand)*99/100]), ms(hand[len(hand)-1]))
	fmt.Fprintf(w, "| First release → every lock held by a waiter | %s |\n", ms(time.Duration(lastFirst-t0.UnixNano())))
	fmt.Fprintf(w, "| First release → last of the %s waiters woken and holding (each unlocks at once; %d hand-offs per lock) | %s |\n",
		thousands(cfg.Waiters), cfg.Waiters/cfg.WaitLocks, ms(time.Duration(lastAcq.Load()-t0.UnixNano())))
	return nil
}

// thousands formats n with commas.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// keySlot is Redis Cluster's hash slot of key: CRC16/XMODEM of the key, or
// of its first non-empty {hash tag}, modulo 16384.
func keySlot(key string) uint16 {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}
