package reliability

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/faultproxy"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/script"
	"github.com/interlock-go/interlock/semaphore"
)

// T23, the soak (make soak). Four worker processes ("soak",
// soak_worker_test.go) of 16 goroutines each contend for a few shared
// names of every kind (reentrant lock with re-entry, fair lock, the write
// half of the read/write lock, fenced lock, plain and expirable semaphore)
// on one redis-server kept in an append-only file, each process through a
// faultproxy of its own. Every 30 s one fault of T2–T12 is applied for a
// few seconds and healed (the faults are drawn in shuffled rounds, so that
// each comes up as often as the others); every minute each process reports
// its heap (after runtime.GC), goroutines and Client records, and the
// server its connections and subscriptions per process (CLIENT LIST, by
// client name). At the end the processes stop, and after two leases the
// server must hold nothing that no holder owns.
//
// Only faults a lease lock survives are applied, since the soak demands 0
// overlaps of every kind: the holder pause (T11) is shorter than the step's
// safety margin; the server restarts from its AOF (T2 with an empty restart
// overlaps by design, see T2's results); T8, T9 and T13 (failover, async
// replication loss and the server clock jump, which break an unfenced lock:
// their canaries) are left out. The client crash (T10) kills and restarts
// only process 3, which holds no plain semaphore (a dead holder's plain
// permit never comes back): processes 0–2 live through the whole soak and
// are the ones judged for heap growth.
//
// Checks, none of them timed: the oracle's overlaps (locks, and more
// permit holders than permits), stale writes accepted (the oracle runs
// with fencing off, so a stale write is counted, not refused) and lost
// updates; the interval checker over each pair of consecutive minutes of
// the oracle's log (which is trimmed as it goes); 0 orphans; HeapAlloc
// of the stable processes grows by less than 10 % from the baseline window
// (minutes 10–15) to the final one (the last 5 minutes); goroutines,
// server connections and subscriptions grow by at most a small bound
// between the same windows; and after the stop every Client holds, waits
// for and undoes nothing, and the server shows no subscription left.
//
// It runs only when asked: -args -tier=soak, INTERLOCK_TIER=soak, or
// INTERLOCK_SOAK set. INTERLOCK_SOAK is the length (default 45m; a value
// that is not a duration means the default), INTERLOCK_SOAK_SAMPLE the
// sampling period (1m), INTERLOCK_SOAK_ROWS the report's row period (5m),
// INTERLOCK_SOAK_FAULT_EVERY the fault period (30s), INTERLOCK_SOAK_ONLY a
// comma-separated list of the faults to draw from ("T4,T5"; all by
// default), and INTERLOCK_SOAK_REPORT the report file ($TMPDIR/interlock-soak.md).
// For shorter runs the windows shrink: the baseline starts at min(10 min,
// length/3) and both windows last min(5 min, length/6). Run it without
// -race, which would take the CPU from the workload. The worker processes
// and the redis-servers inherit the test's niceness (nice -n 10 make soak).

const tierSoak = "soak"

// soakSettings are the soak's parameters.
type soakSettings struct {
	length, sample, rows, faultEvery time.Duration
	report                           string
	only                             []string // fault name prefixes ("T4", "T5"); none: all
}

// faults returns the faults the settings select, in a fresh slice.
func (s soakSettings) faults() []soakFault {
	var out []soakFault
	for _, f := range soakFaults {
		if len(s.only) == 0 || slices.ContainsFunc(s.only, func(p string) bool { return strings.HasPrefix(f.name, p+" ") }) {
			out = append(out, f)
		}
	}
	return out
}

// soakWanted reads the settings; ok is false unless the soak was asked for.
func soakWanted() (s soakSettings, ok bool) {
	env, set := os.LookupEnv("INTERLOCK_SOAK")
	if !set && *tierFlag != tierSoak && os.Getenv("INTERLOCK_TIER") != tierSoak {
		return s, false
	}
	dur := func(v string, def time.Duration) time.Duration {
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			return d
		}
		return def
	}
	s = soakSettings{length: dur(env, 45*time.Minute), sample: dur(os.Getenv("INTERLOCK_SOAK_SAMPLE"), time.Minute),
		rows:       dur(os.Getenv("INTERLOCK_SOAK_ROWS"), 5*time.Minute),
		faultEvery: dur(os.Getenv("INTERLOCK_SOAK_FAULT_EVERY"), 30*time.Second),
		report:     os.Getenv("INTERLOCK_SOAK_REPORT")}
	if only := os.Getenv("INTERLOCK_SOAK_ONLY"); only != "" {
		s.only = strings.Split(only, ",")
	}
	if s.report == "" {
		s.report = filepath.Join(os.TempDir(), "interlock-soak.md")
	}
	return s, true
}

// The soak's shape.
const (
	soakProcs     = 4
	soakLockNames = 2 // names per lock kind
	soakLease     = 4 * time.Second
	soakCrashProc = 3 // the only process T10 kills
)

// soakSlots returns the 16 slot kinds of process i.
func soakSlots(i int) []lockKind {
	var s []lockKind
	for _, k := range allKinds {
		s = append(s, k, k, k)
	}
	if i == soakCrashProc {
		return append(s, kindExpirable, kindExpirable, kindExpirable, kindExpirable)
	}
	return append(s, kindSemaphore, kindSemaphore, kindExpirable, kindExpirable)
}

// soakClientName is the CLIENT SETNAME of process i's connections.
func soakClientName(i int) string { return "soak-" + strconv.Itoa(i) }

// soakEnv is the soak's world.
type soakEnv struct {
	t       *testing.T
	set     soakSettings
	srv     *redistest.Server
	direct  rueidis.Client // the lock server, never faulted
	oracle  *Oracle
	proxies []*faultproxy.Proxy
	procs   []*workerProc
	restart []int // restarts per process
	rnd     *rand.Rand
	start   time.Time

	faults   int            // applied so far
	byFault  map[string]int // applied, by name
	faultLog []string
	rows     []soakRow
	checker  soakWindowCheck
}

// soakRow is one sample of everything.
type soakRow struct {
	Due      time.Duration // when it was scheduled (a sample due during a fault waits for the heal)
	At       time.Duration
	Procs    []*soakSample // nil: not sampled (restarting)
	Conns    []int         // server connections per process (-1: unknown)
	Subs     []int         // server subscriptions (sub+psub+ssub) per process
	Channels int           // PUBSUB CHANNELS + SHARDCHANNELS on the server
	Faults   int
	Oracle   OracleStats
	Checker  int // overlaps the interval checker found so far
}

func TestT23Soak(t *testing.T) {
	set, ok := soakWanted()
	if !ok {
		t.Skip("the soak runs only when asked: make soak, -args -tier=soak or INTERLOCK_SOAK=45m")
	}
	if raceEnabled {
		t.Log("warning: the soak runs with the race detector; its CPU cost slows the workload")
	}
	redistest.RequireProcess(t)
	e := &soakEnv{t: t, set: set, rnd: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 23)),
		byFault: map[string]int{}, restart: make([]int, soakProcs)}
	e.srv = redistest.Standalone(t, "--appendonly", "yes", "--appendfsync", "always")
	e.direct = e.srv.Client(t)
	e.oracle = startOracle(t)
	e.initSemaphores()
	for i := range soakProcs {
		p, err := faultproxy.Start(e.srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		e.proxies = append(e.proxies, p)
		e.procs = append(e.procs, nil)
		e.startProc(i)
	}
	t.Logf("soak: %v, %d processes × 16 goroutines, lease %v, a fault every %v, samples every %v",
		set.length, soakProcs, soakLease, set.faultEvery, set.sample)
	e.start = time.Now()
	e.run()
	e.finish()
}

// initSemaphores gives both semaphores their permits.
func (e *soakEnv) initSemaphores() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := interlock.New(e.direct)
	if err != nil {
		e.t.Fatal(err)
	}
	defer c.Close()
	if _, err := semaphore.New(c, soakLockName(kindSemaphore, 0)).TrySetPermits(ctx, soakPermits); err != nil {
		e.t.Fatal(err)
	}
	if err := semaphore.NewExpirable(c, soakLockName(kindExpirable, 0)).SetPermits(ctx, soakPermits); err != nil {
		e.t.Fatal(err)
	}
}

// startProc starts process i and waits until it is ready.
func (e *soakEnv) startProc(i int) {
	w := startWorker(e.t, "soak", soakConfig{Addr: e.proxies[i].Addr(), OracleAddr: e.oracle.Addr(),
		ClientName: soakClientName(i), Lease: soakLease, Slots: soakSlots(i), Names: soakLockNames})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := w.Expect(ctx, "ready"); err != nil {
		e.t.Fatal(err)
	}
	e.procs[i] = w
}

// run is the soak's schedule: a fault every faultEvery, a sample every
// sample, one at a time on the test's goroutine (a sample due during a
// fault is taken once it healed), until the length has passed.
func (e *soakEnv) run() {
	nextFault, nextSample := e.set.faultEvery, e.set.sample
	var round []soakFault
	for {
		now := time.Since(e.start)
		if now >= e.set.length {
			e.sampleAll(e.set.length)
			return
		}
		switch {
		case now >= nextSample:
			e.sampleAll(nextSample)
			nextSample += e.set.sample
		case now >= nextFault:
			if len(round) == 0 {
				round = e.set.faults()
				e.rnd.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
			}
			f := round[0]
			round = round[1:]
			e.apply(f)
			nextFault += e.set.faultEvery
		default:
			wait := min(nextSample, nextFault, e.set.length) - now
			time.Sleep(wait) // the test's own schedule
		}
	}
}

// soakFault is one kind of fault: do applies it, waits and heals it, and
// describes what it did.
type soakFault struct {
	name string
	do   func(e *soakEnv) (string, error)
}

// apply runs f and logs it.
func (e *soakEnv) apply(f soakFault) {
	at := time.Since(e.start).Round(time.Second)
	what, err := f.do(e)
	if err != nil {
		e.t.Fatalf("soak: fault %s at %v: %v", f.name, at, err)
	}
	e.faults++
	e.byFault[f.name]++
	e.faultLog = append(e.faultLog, fmt.Sprintf("%v %s: %s", at, f.name, what))
}

// soakSleep waits d; a fault's length.
func soakSleep(d time.Duration) { time.Sleep(d) }

// uniform draws a duration in [lo, hi).
func (e *soakEnv) uniform(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(e.rnd.Int64N(int64(hi-lo)))
}

// soakScripts are the proxy predicates of the faults aimed at scripts.
var (
	soakAcquireScripts = netScripts(script.Acquire(), script.FairAcquire(), script.FairTryAcquire(), script.RWWriteAcquire(),
		script.FencedAcquire(), script.SemAcquire(), script.PESAcquire())
	soakUnlockScripts = netScripts(script.Unlock(), script.FairUnlock(), script.RWWriteUnlock(), script.SemRelease(),
		script.PESRelease(), script.PESReleaseOne())
	soakRenewScripts = netScripts(script.Renew(), script.PESRenew())
)

// soakFaults are the faults the soak draws from.
var soakFaults = []soakFault{
	{"T2 redis kill", func(e *soakEnv) (string, error) {
		down := e.uniform(500*time.Millisecond, 3*time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return fmt.Sprintf("kill -9, restart from the AOF after %v", down.Round(time.Millisecond)), e.srv.RestartAfter(ctx, down)
	}},
	{"T3 redis pause", func(e *soakEnv) (string, error) {
		d := e.uniform(soakLease, 2*soakLease)
		if err := e.srv.Pause(); err != nil {
			return "", err
		}
		soakSleep(d)
		return fmt.Sprintf("SIGSTOP for %v", d.Round(time.Millisecond)), e.srv.Resume()
	}},
	{"T4 partition", func(e *soakEnv) (string, error) {
		i, d := e.rnd.IntN(soakProcs), e.uniform(soakLease/2, 3*soakLease)
		e.proxies[i].Blackhole(true)
		soakSleep(d)
		e.proxies[i].Blackhole(false)
		return fmt.Sprintf("process %d blackholed for %v", i, d.Round(time.Millisecond)), nil
	}},
	{"T5 lost acquire replies", func(e *soakEnv) (string, error) {
		i := e.rnd.IntN(soakProcs)
		e.proxies[i].DropReplyTo(soakAcquireScripts, 3)
		soakSleep(5 * time.Second)
		e.proxies[i].DropReplyTo(nil, 0)
		return fmt.Sprintf("process %d: up to 3 acquire replies lost in 5 s", i), nil
	}},
	{"T6 lost unlock replies", func(e *soakEnv) (string, error) {
		i := e.rnd.IntN(soakProcs)
		e.proxies[i].DropReplyTo(soakUnlockScripts, 3)
		soakSleep(5 * time.Second)
		e.proxies[i].DropReplyTo(nil, 0)
		return fmt.Sprintf("process %d: up to 3 unlock replies lost in 5 s", i), nil
	}},
	{"T7 pub/sub", func(e *soakEnv) (string, error) {
		i := e.rnd.IntN(soakProcs)
		p := e.proxies[i]
		p.DropPushes(true)
		killed := 0
		for range 10 {
			killed += p.ResetSubscribers()
			soakSleep(500 * time.Millisecond)
		}
		p.DropPushes(false)
		return fmt.Sprintf("process %d: messages dropped for 5 s, %d subscriber connections killed", i, killed), nil
	}},
	{"T10 client crash", func(e *soakEnv) (string, error) {
		i := soakCrashProc
		w := e.procs[i]
		pid := w.Pid()
		if err := w.Kill(); err != nil {
			return "", err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		select {
		case <-w.Exited():
		case <-ctx.Done():
			return "", fmt.Errorf("process %v did not exit", w)
		}
		// A dead process never leaves its sections: take it out of the
		// oracle's occupancy, well within the lease its locks still run.
		n, err := e.forget(ctx, pid)
		if err != nil {
			return "", err
		}
		soakSleep(time.Second)
		e.startProc(i)
		e.restart[i]++
		return fmt.Sprintf("process %d (pid %d) killed with %d sections open, restarted after 1 s", i, pid, n), nil
	}},
	{"T11 holder pause", func(e *soakEnv) (string, error) {
		i, d := e.rnd.IntN(soakProcs), e.uniform(100*time.Millisecond, 250*time.Millisecond)
		w := e.procs[i]
		if err := w.Stop(); err != nil {
			return "", err
		}
		soakSleep(d)
		return fmt.Sprintf("process %d SIGSTOP for %v", i, d.Round(time.Millisecond)), w.Cont()
	}},
	{"T12 slow renewals", func(e *soakEnv) (string, error) {
		i := e.rnd.IntN(soakProcs)
		if err := e.proxies[i].DelayReplyTo(soakRenewScripts, soakLease*2/5, soakLease/5); err != nil {
			return "", err
		}
		soakSleep(10 * time.Second)
		return fmt.Sprintf("process %d: renew replies delayed 0.2–0.6 lease for 10 s", i),
			e.proxies[i].DelayReplyTo(nil, 0, 0)
	}},
}

// forget removes the sections of process pid from the oracle's occupancy
// hashes and returns how many it removed.
func (e *soakEnv) forget(ctx context.Context, pid int) (int, error) {
	rc := e.oracle.rc
	mark := fmt.Sprintf("#%d.", pid)
	n := 0
	for _, pattern := range []string{"oracle:occ:*", "oracle:semocc:*"} {
		keys, err := soakScan(ctx, rc, pattern)
		if err != nil {
			return n, err
		}
		for _, k := range keys {
			fields, err := rc.Do(ctx, rc.B().Hkeys().Key(k).Build()).AsStrSlice()
			if err != nil {
				return n, err
			}
			for _, f := range fields {
				if strings.Contains(f, mark) {
					if err := rc.Do(ctx, rc.B().Hdel().Key(k).Field(f).Build()).Error(); err != nil {
						return n, err
					}
					n++
				}
			}
		}
	}
	return n, nil
}

// soakScan returns the keys matching pattern.
func soakScan(ctx context.Context, rc rueidis.Client, pattern string) ([]string, error) {
	var out []string
	var cursor uint64
	for {
		se, err := rc.Do(ctx, rc.B().Scan().Cursor(cursor).Match(pattern).Count(1000).Build()).AsScanEntry()
		if err != nil {
			return out, err
		}
		out = append(out, se.Elements...)
		if cursor = se.Cursor; cursor == 0 {
			slices.Sort(out)
			return out, nil
		}
	}
}

// sampleAll takes one row: every process, the server, the oracle.
func (e *soakEnv) sampleAll(due time.Duration) {
	row := soakRow{Due: due, At: time.Since(e.start), Faults: e.faults, Procs: make([]*soakSample, soakProcs)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i, w := range e.procs {
		if err := w.Send("sample"); err != nil {
			e.t.Logf("soak: sampling process %d: %v", i, err)
			continue
		}
		var s soakSample
		if err := w.ExpectJSON(ctx, "sample", &s); err != nil {
			e.t.Fatalf("soak: sampling process %d: %v", i, err)
		}
		row.Procs[i] = &s
	}
	row.Conns, row.Subs = e.serverClients(ctx)
	row.Channels = e.serverChannels(ctx)
	var err error
	if row.Oracle, err = e.oracle.Stats(ctx); err != nil {
		e.t.Fatalf("soak: %v", err)
	}
	if err := e.checker.advance(ctx, e.oracle); err != nil {
		e.t.Fatalf("soak: %v", err)
	}
	row.Checker = len(e.checker.overlaps)
	e.rows = append(e.rows, row)
	e.t.Logf("soak %v: %s", row.At.Round(time.Second), row.brief())
}

// serverClients counts the server's connections and subscriptions per
// process, by client name; -1 when CLIENT LIST failed.
func (e *soakEnv) serverClients(ctx context.Context) (conns, subs []int) {
	conns, subs = make([]int, soakProcs), make([]int, soakProcs)
	list, err := e.direct.Do(ctx, e.direct.B().ClientList().Build()).ToString()
	if err != nil {
		e.t.Logf("soak: CLIENT LIST: %v", err)
		for i := range conns {
			conns[i], subs[i] = -1, -1
		}
		return conns, subs
	}
	for _, line := range strings.Split(list, "\n") {
		f := map[string]string{}
		for _, kv := range strings.Fields(line) {
			k, v, _ := strings.Cut(kv, "=")
			f[k] = v
		}
		for i := range soakProcs {
			if f["name"] == soakClientName(i) {
				conns[i]++
				for _, k := range []string{"sub", "psub", "ssub"} {
					n, _ := strconv.Atoi(f[k])
					subs[i] += n
				}
			}
		}
	}
	return conns, subs
}

// serverChannels counts the server's active channels, classic and
// sharded, and patterns; -1 on an error.
func (e *soakEnv) serverChannels(ctx context.Context) int {
	rc := e.direct
	ch, err1 := rc.Do(ctx, rc.B().PubsubChannels().Build()).AsStrSlice()
	sh, err2 := rc.Do(ctx, rc.B().PubsubShardchannels().Build()).AsStrSlice()
	if script.IsUnknownCommand(err2) {
		sh, err2 = nil, nil // Redis 6: no sharded channels
	}
	pat, err3 := rc.Do(ctx, rc.B().PubsubNumpat().Build()).AsInt64()
	if err1 != nil || err2 != nil || err3 != nil {
		return -1
	}
	return len(ch) + len(sh) + int(pat)
}

// soakWindowCheck runs the interval checker over the oracle's log a pair
// of samples at a time, and trims what it no longer needs, so that the
// log stays small over a long soak. A section spans at most a few seconds,
// so two consecutive windows hold it whole; a section cut at a window's
// start has no Enter there and is skipped, and one cut at the end only
// looks shorter, so windows add no false overlap. The checker's lost
// updates are not used (each check restarts the counter at 0); the
// oracle's counters count them exactly.
type soakWindowCheck struct {
	prev     []Event
	lastID   string
	seen     map[string]bool
	overlaps []Overlap
	sections int
}

// advance checks the previous window with the new events, then trims
// the log before the new window.
func (w *soakWindowCheck) advance(ctx context.Context, o *Oracle) error {
	start := "-"
	if w.lastID != "" {
		start = "(" + w.lastID
	}
	var fresh []Event
	for {
		entries, err := o.rc.Do(ctx, o.rc.B().Xrange().Key(oracleLog).Start(start).End("+").Count(5000).Build()).AsXRange()
		if err != nil {
			return fmt.Errorf("oracle log: %w", err)
		}
		for _, en := range entries {
			ev := Event{ID: en.ID, Res: en.FieldValues["r"], Owner: en.FieldValues["o"], Section: en.FieldValues["s"],
				Op: en.FieldValues["op"], OK: en.FieldValues["ok"] == "1", Value: en.FieldValues["v"]}
			ev.Token, _ = strconv.ParseUint(en.FieldValues["k"], 10, 64)
			ev.T, _ = strconv.ParseInt(en.FieldValues["t"], 10, 64)
			fresh = append(fresh, ev)
		}
		if len(entries) < 5000 {
			break
		}
		start = "(" + entries[len(entries)-1].ID
	}
	if len(fresh) == 0 {
		return nil
	}
	rep := checkIntervals(append(slices.Clip(w.prev), fresh...))
	if w.seen == nil {
		w.seen = map[string]bool{}
	}
	for _, ov := range rep.Overlaps {
		if k := ov.First.Section + " " + ov.Next.Section; !w.seen[k] {
			w.seen[k] = true
			w.overlaps = append(w.overlaps, ov)
		}
	}
	w.sections += checkIntervals(fresh).Sections
	w.prev, w.lastID = fresh, fresh[len(fresh)-1].ID
	return o.rc.Do(ctx, o.rc.B().Xtrim().Key(oracleLog).Minid().Threshold(fresh[0].ID).Build()).Error()
}

// brief is a row on one line, for the log.
func (r soakRow) brief() string {
	var heap, gor, holds []string
	for _, p := range r.Procs {
		if p == nil {
			heap, gor, holds = append(heap, "-"), append(gor, "-"), append(holds, "-")
			continue
		}
		heap = append(heap, fmt.Sprintf("%.2f", mib(p.HeapAlloc)))
		gor = append(gor, strconv.Itoa(p.Goroutines))
		holds = append(holds, strconv.Itoa(p.Stats.Holds))
	}
	return fmt.Sprintf("heap MiB %s, goroutines %s, holds %s, conns %v, subs %v, channels %d, faults %d, %s, checker overlaps %d",
		strings.Join(heap, "/"), strings.Join(gor, "/"), strings.Join(holds, "/"), r.Conns, r.Subs, r.Channels, r.Faults, r.Oracle, r.Checker)
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// violations is what the oracle and the checker counted by then.
func (r soakRow) violations() int64 {
	return r.Oracle.Overlaps + r.Oracle.StaleAccepted + r.Oracle.LostUpdates + int64(r.Checker)
}

// finish stops the processes, lets the leases run out, and judges.
func (e *soakEnv) finish() {
	t := e.t
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	final := make([]soakSample, soakProcs)
	for _, w := range e.procs {
		if err := w.Send("stop"); err != nil {
			t.Fatal(err)
		}
	}
	for i, w := range e.procs {
		if err := w.ExpectJSON(ctx, "stopped", &final[i]); err != nil {
			t.Fatal(err)
		}
		_ = w.CloseStdin()
		if err := w.Wait(ctx); err != nil {
			t.Errorf("soak: process %d: %v", i, err)
		}
	}
	if err := e.checker.advance(ctx, e.oracle); err != nil {
		t.Fatal(err)
	}
	settle := 2*soakLease + time.Second
	soakSleep(settle)
	orphans := e.orphans(ctx)
	conns, subs := e.serverClients(ctx)
	channels := e.serverChannels(ctx)
	stats, err := e.oracle.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	report := e.report(final, orphans, stats, conns, subs, channels, settle)
	t.Logf("soak: faults:\n%s", strings.Join(e.faultLog, "\n"))
	t.Log("\n" + report)
	if err := os.WriteFile(e.set.report, []byte(report), 0o644); err != nil {
		t.Errorf("soak: writing the report: %v", err)
	} else {
		t.Logf("soak: report written to %s", e.set.report)
	}
	// The verdict.
	if stats.Overlaps != 0 || stats.StaleAccepted != 0 || stats.LostUpdates != 0 {
		t.Errorf("soak: oracle: %v", stats)
	}
	for _, ov := range e.checker.overlaps {
		t.Errorf("soak: checker: %v", ov)
	}
	if len(orphans) != 0 {
		t.Errorf("soak: %d orphans: %v", len(orphans), orphans)
	}
	for i, s := range final {
		if s.Stats != (interlock.Stats{}) {
			t.Errorf("soak: process %d still has records after the stop: %+v", i, s.Stats)
		}
	}
	for i := range soakProcs {
		if subs[i] > 0 {
			t.Errorf("soak: process %d's connections still hold %d subscriptions after the stop", i, subs[i])
		}
	}
	for _, f := range e.trends() {
		if !f.ok {
			t.Errorf("soak: %s", f.text)
		}
	}
}

// orphans lists what the server holds that no holder owns, once every
// process stopped and the leases ran out: any key but the fencing
// counters, the two semaphores, and the unlock latches and semaphore
// receipts that have a TTL (they expire by themselves); and each semaphore
// whose free permits are not all of them.
func (e *soakEnv) orphans(ctx context.Context) []string {
	c, err := interlock.New(e.direct)
	if err != nil {
		e.t.Fatal(err)
	}
	defer c.Close()
	var out []string
	plain := semaphore.New(c, soakLockName(kindSemaphore, 0))
	if n, err := plain.Available(ctx); err != nil || n != soakPermits {
		out = append(out, fmt.Sprintf("%s: %d of %d permits free (%v)", plain.Name(), n, soakPermits, err))
	}
	exp := semaphore.NewExpirable(c, soakLockName(kindExpirable, 0))
	if n, err := exp.Available(ctx); err != nil || n != soakPermits {
		out = append(out, fmt.Sprintf("%s: %d of %d permits free (%v)", exp.Name(), n, soakPermits, err))
	}
	if n, err := exp.Acquired(ctx); err != nil || n != 0 {
		out = append(out, fmt.Sprintf("%s: %d permits acquired (%v)", exp.Name(), n, err))
	}
	keys, err := soakScan(ctx, e.direct, "*")
	if err != nil {
		e.t.Errorf("soak: %v", err)
	}
	for _, k := range keys {
		switch {
		case strings.HasPrefix(k, "redisson_lock_token:"), k == plain.Name(), k == exp.Name():
		case strings.HasPrefix(k, "redisson_unlock_latch:"), strings.HasPrefix(k, "interlock_receipt:"):
			if ttl, err := netPTTL(ctx, e.direct, k); err != nil || ttl < 0 {
				out = append(out, fmt.Sprintf("%s (pttl %d, %v)", k, ttl, err))
			}
		default:
			out = append(out, k)
		}
	}
	if len(keys) > 0 {
		e.t.Logf("soak: left on the server:\n%s", netDump(e.direct, keys))
	}
	return out
}

// soakFinding is one trend check.
type soakFinding struct {
	ok   bool
	text string
}

// windows returns the rows of the baseline and the final window.
func (e *soakEnv) windows() (base, last []soakRow) {
	d := e.set.length
	warm := min(10*time.Minute, d/3)
	win := min(5*time.Minute, d/6)
	for _, r := range e.rows {
		if r.Due >= warm && r.Due <= warm+win {
			base = append(base, r)
		}
		if r.Due >= d-win {
			last = append(last, r)
		}
	}
	if len(base) == 0 {
		for _, r := range e.rows {
			if r.Due >= warm {
				base = append(base, r)
				break
			}
		}
	}
	if len(last) == 0 && len(e.rows) > 0 {
		last = e.rows[len(e.rows)-1:]
	}
	return base, last
}

// mean is the mean of f over the rows where f is known (ok).
func mean(rows []soakRow, f func(soakRow) (float64, bool)) float64 {
	var s float64
	n := 0
	for _, r := range rows {
		if v, ok := f(r); ok {
			s += v
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return s / float64(n)
}

// Trend bounds, per process, between the baseline and the final window.
const (
	soakHeapGrowth      = 0.10 // HeapAlloc, relative
	soakGoroutineGrowth = 10   // goroutines
	soakConnGrowth      = 2    // server connections
	soakSubGrowth       = 3    // subscriptions, the Client's channels and the server's
)

// trends compares the baseline and the final window.
func (e *soakEnv) trends() []soakFinding {
	base, last := e.windows()
	var out []soakFinding
	if len(base) == 0 || len(last) == 0 {
		return []soakFinding{{false, "no samples to compare"}}
	}
	check := func(what string, i int, f func(soakRow) (float64, bool), bound float64, relative bool) {
		b, l := mean(base, f), mean(last, f)
		if math.IsNaN(b) || math.IsNaN(l) {
			return
		}
		grow := l - b
		ok := grow <= bound
		desc := fmt.Sprintf("%+.1f (bound %+.0f)", grow, bound)
		if relative {
			ok = b <= 0 || grow/b < bound
			desc = fmt.Sprintf("%+.1f %% (bound %.0f %%)", 100*grow/b, 100*bound)
		}
		out = append(out, soakFinding{ok, fmt.Sprintf("process %d %s: baseline %.2f, final %.2f: %s", i, what, b, l, desc)})
	}
	for i := range soakProcs {
		proc := func(get func(*soakSample) float64) func(soakRow) (float64, bool) {
			return func(r soakRow) (float64, bool) {
				if r.Procs[i] == nil {
					return 0, false
				}
				return get(r.Procs[i]), true
			}
		}
		stable := e.restart[i] == 0
		if stable {
			check("heap MiB", i, proc(func(s *soakSample) float64 { return mib(s.HeapAlloc) }), soakHeapGrowth, true)
		}
		check("goroutines", i, proc(func(s *soakSample) float64 { return float64(s.Goroutines) }), soakGoroutineGrowth, false)
		check("client channels", i, proc(func(s *soakSample) float64 { return float64(s.Stats.Channels) }), soakSubGrowth, false)
		check("server connections", i, func(r soakRow) (float64, bool) { return float64(r.Conns[i]), r.Conns[i] >= 0 }, soakConnGrowth, false)
		check("server subscriptions", i, func(r soakRow) (float64, bool) { return float64(r.Subs[i]), r.Subs[i] >= 0 }, soakSubGrowth, false)
	}
	return out
}

// report formats the soak's results as markdown.
func (e *soakEnv) report(final []soakSample, orphans []string, stats OracleStats, conns, subs []int, channels int, settle time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### T23 soak: %v, %d processes × 16 goroutines, lease %v\n\n", e.set.length, soakProcs, soakLease)
	fmt.Fprintf(&b, "Heap is HeapAlloc after runtime.GC, MiB per process (0/1/2/3); goroutines and connections are summed "+
		"over the processes (connections and subscriptions as CLIENT LIST shows them, by client name); "+
		"subscriptions are the Clients' channels / the server's sub+ssub+psub; hand-offs are the oracle's critical "+
		"sections begun; violations are overlaps + stale writes accepted + lost updates + checker overlaps.\n\n")
	b.WriteString("| minute | heap MiB | goroutines | connections | subscriptions | faults | hand-offs | violations |\n")
	b.WriteString("|---:|---|---:|---:|---|---:|---:|---:|\n")
	for i, r := range e.rows {
		if r.Due%e.set.rows != 0 && i != len(e.rows)-1 {
			continue
		}
		var heap []string
		gor, ch := 0, 0
		for _, p := range r.Procs {
			if p == nil {
				heap = append(heap, "-")
				continue
			}
			heap = append(heap, fmt.Sprintf("%.2f", mib(p.HeapAlloc)))
			gor += p.Goroutines
			ch += p.Stats.Channels
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d / %d | %d | %d | %d |\n", strconv.FormatFloat(r.Due.Minutes(), 'f', -1, 64), strings.Join(heap, " / "),
			gor, soakSum(r.Conns), ch, soakSum(r.Subs), r.Faults, r.Oracle.Enters, r.violations())
	}
	fmt.Fprintf(&b, "\nFaults applied: %d (", e.faults)
	names := make([]string, 0, len(soakFaults))
	for _, f := range soakFaults {
		names = append(names, fmt.Sprintf("%s %d", f.name, e.byFault[f.name]))
	}
	b.WriteString(strings.Join(names, ", ") + ").\n\n")
	fmt.Fprintf(&b, "Oracle: %v; checker: %d sections, %d overlaps.\n\n", stats, e.checker.sections, len(e.checker.overlaps))
	fmt.Fprintf(&b, "After the stop and %v: %d orphans; server connections %v, subscriptions %v, channels %d.\n\n",
		settle, len(orphans), conns, subs, channels)
	b.WriteString("Per process at the stop (errors are counted, not failures: a fault makes Lock time out or Unlock find the hold lost):\n\n")
	for i, s := range final {
		fmt.Fprintf(&b, "- process %d (restarted %d×): %d acquisitions, records %+v %v after the last slot returned, errors %v\n",
			i, e.restart[i], s.Acquired, s.Stats, s.Drained.Round(time.Millisecond), s.Errors)
		for _, m := range s.Samples {
			fmt.Fprintf(&b, "  - %s\n", strings.ReplaceAll(m, "|", "/"))
		}
	}
	b.WriteString("\nTrends (baseline window vs final window):\n\n")
	for _, f := range e.trends() {
		mark := "ok"
		if !f.ok {
			mark = "FAIL"
		}
		fmt.Fprintf(&b, "- %s: %s\n", mark, f.text)
	}
	return b.String()
}

// soakSum sums the known values of v (-1 is unknown).
func soakSum(v []int) int {
	s := 0
	for _, n := range v {
		s += max(n, 0)
	}
	return s
}
