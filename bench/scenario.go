package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// A Scenario is one row group of the table.
type Scenario struct {
	ID    string // "S1"
	Title string
	Kind  LockKind
	// Workers goroutines in total; Procs processes share them (S4: 2).
	Workers, Procs int
	// Distinct: every goroutine has its own key; otherwise all share one.
	Distinct bool
	// Wait: the latencies are the waits in Lock (contention); otherwise
	// they are the lock+unlock pair times.
	Wait bool
	// Floors: the floors run in this scenario.
	Floors bool
	// Permits: a semaphore scenario's free permits per semaphore, set
	// before the cell (semaphore.go).
	Permits int
}

// LockKind selects which lock of a Session a scenario uses.
type LockKind string

const (
	KindExclusive LockKind = "exclusive"
	KindFair      LockKind = "fair"
	KindRead      LockKind = "read"
)

var scenarios = []Scenario{
	{ID: "S1", Title: "uncontended lock+unlock, 1 goroutine", Kind: KindExclusive, Workers: 1, Procs: 1, Floors: true},
	{ID: "S2", Title: "64 goroutines, 64 distinct keys", Kind: KindExclusive, Workers: 64, Procs: 1, Distinct: true, Floors: true},
	{ID: "S3", Title: "16 goroutines on one key", Kind: KindExclusive, Workers: 16, Procs: 1, Wait: true},
	{ID: "S4", Title: "16 goroutines on one key, split over 2 processes (8+8)", Kind: KindExclusive, Workers: 16, Procs: 2, Wait: true},
	{ID: "S5", Title: "fair lock hand-off, 16 goroutines on one key", Kind: KindFair, Workers: 16, Procs: 1, Wait: true},
	{ID: "S6", Title: "64 readers on one read/write lock", Kind: KindRead, Workers: 64, Procs: 1, Floors: true},
	// Semaphores (semaphore.go): a "pair" is acquire+release of 1 permit.
	{ID: "P1", Title: "semaphore: uncontended acquire+release of 1 permit, 1 goroutine", Kind: KindSemaphore, Workers: 1, Procs: 1, Floors: true, Permits: 1},
	{ID: "P2", Title: "semaphore: 64 goroutines, 64 distinct semaphores of 1 permit", Kind: KindSemaphore, Workers: 64, Procs: 1, Distinct: true, Floors: true, Permits: 1},
	{ID: "P3", Title: "semaphore: 64 goroutines on one semaphore of 8 permits", Kind: KindSemaphore, Workers: 64, Procs: 1, Wait: true, Permits: 8},
	{ID: "X1", Title: "expirable semaphore: uncontended acquire+release of 1 permit, 1 goroutine", Kind: KindExpirable, Workers: 1, Procs: 1, Floors: true, Permits: 1},
	{ID: "X2", Title: "expirable semaphore: 64 goroutines, 64 distinct semaphores of 1 permit", Kind: KindExpirable, Workers: 64, Procs: 1, Distinct: true, Floors: true, Permits: 1},
	{ID: "X3", Title: "expirable semaphore: 64 goroutines on one semaphore of 8 permits", Kind: KindExpirable, Workers: 64, Procs: 1, Wait: true, Permits: 8},
}

func scenarioByID(id string) (Scenario, bool) {
	for _, s := range scenarios {
		if s.ID == id {
			return s, true
		}
	}
	return Scenario{}, false
}

// A Cell is one library in one scenario in one round, as run by one
// process.
type Cell struct {
	Scenario Scenario
	Key      string // the lock name, or the prefix of the 64 names of S2
	Workers  int    // goroutines in this process
	Duration time.Duration
}

// A Sample is what one process measured in one cell.
type Sample struct {
	Ops     int64           `json:"ops"`     // lock+unlock pairs completed
	Elapsed time.Duration   `json:"elapsed"` // from start until the last goroutine finished
	Lat     []time.Duration `json:"lat"`     // pair times, or waits in Lock (Scenario.Wait)
	// Client-side command count of the cell; Counted false when unknown.
	Cmds    int64 `json:"cmds"`
	Counted bool  `json:"counted"`
	// Server side, filled by the parent: script runs, and every command
	// executed including those inside scripts (INFO commandstats delta).
	Scripts  int64 `json:"scripts"`
	Executed int64 `json:"executed"`
	// CPU is the client process's CPU time (user and system) during the
	// cell, every goroutine of it; CPUCounted false when unknown (a
	// library that runs in another process).
	CPU        time.Duration `json:"cpu"`
	CPUCounted bool          `json:"cpu_counted"`
}

func (s *Sample) merge(o Sample) {
	s.Ops += o.Ops
	s.Elapsed = max(s.Elapsed, o.Elapsed)
	s.Lat = append(s.Lat, o.Lat...)
	s.Cmds += o.Cmds
	s.Counted = s.Counted && o.Counted
	s.CPU += o.CPU
	s.CPUCounted = s.CPUCounted && o.CPUCounted
}

// errNA is a scenario that a library cannot run.
var errNA = fmt.Errorf("n/a")

// mutexFor returns the Mutex of the cell's kind, or errNA.
func mutexFor(sess Session, kind LockKind, name string) (Mutex, error) {
	switch kind {
	case KindFair:
		if f, ok := sess.(FairLocker); ok {
			return f.FairMutex(name), nil
		}
		return nil, errNA
	case KindRead:
		if r, ok := sess.(RWLocker); ok {
			return r.ReadMutex(name), nil
		}
		return nil, errNA
	case KindSemaphore, KindExpirable:
		if s, ok := sess.(Semaphores); ok {
			return s.Permit(kind, name), nil
		}
		return nil, errNA
	}
	if _, ok := sess.(semaphoresOnly); ok {
		return nil, errNA
	}
	return sess.Mutex(name), nil
}

// runLocal runs the cell's goroutines in this process: each locks and
// unlocks until the duration has passed, then finishes the acquisition it
// is waiting for. A Session that is a CellRunner runs the cell itself.
func runLocal(ctx context.Context, sess Session, c Cell) (Sample, error) {
	if r, ok := sess.(CellRunner); ok {
		s, ok, err := r.RunCell(ctx, c)
		if err == nil && !ok {
			err = errNA
		}
		return s, err
	}
	ms := make([]Mutex, c.Workers)
	for w := range ms {
		name := c.Key
		if c.Scenario.Distinct {
			name += ":" + strconv.Itoa(w)
		}
		m, err := mutexFor(sess, c.Scenario.Kind, name)
		if err != nil {
			return Sample{}, err
		}
		ms[w] = m
	}
	cmds0, counted := sess.Commands()
	cpu0 := processCPU()
	lockCtx, cancel := context.WithTimeout(ctx, c.Duration+60*time.Second)
	defer cancel()
	lats := make([][]time.Duration, c.Workers)
	errs := make([]error, c.Workers)
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(c.Duration)
	for w, m := range ms {
		wg.Go(func() {
			lat := make([]time.Duration, 0, 1024)
			for t0 := time.Now(); t0.Before(end); t0 = time.Now() {
				if err := m.Lock(lockCtx); err != nil {
					errs[w] = fmt.Errorf("lock: %w", err)
					break
				}
				t1 := time.Now()
				if err := m.Unlock(lockCtx); err != nil {
					errs[w] = fmt.Errorf("unlock: %w", err)
					break
				}
				if c.Scenario.Wait {
					lat = append(lat, t1.Sub(t0))
				} else {
					lat = append(lat, time.Since(t0))
				}
			}
			lats[w] = lat
		})
	}
	wg.Wait()
	s := Sample{Elapsed: time.Since(start), Lat: slices.Concat(lats...), Counted: counted}
	s.Ops = int64(len(s.Lat))
	// Let work sent after the caller's path (interlock's batched latch
	// DELs, rueidislock's background key deletions) reach the counters.
	time.Sleep(20 * time.Millisecond)
	cmds1, _ := sess.Commands()
	s.Cmds = cmds1 - cmds0
	s.CPU, s.CPUCounted = processCPU()-cpu0, true
	for _, err := range errs {
		if err != nil {
			return s, err
		}
	}
	return s, nil
}

// processCPU is the CPU time this process has used so far, user and
// system, all threads.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
