package reliability

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/semaphore"
)

// The worker "soak", T23's child process (soak_test.go). Each of its slots
// is a goroutine that, until "stop", takes a lock or a permit of its kind on
// one of a few names shared by every soak process, runs one to three oracle
// steps under it, checking before each that the hold is still valid for the
// step (guard not done, remaining validity at least the step budget), and
// releases it. The reentrant lock re-enters its hold half the time. The
// plain semaphore has no lease: its holders do not check.
//
// Commands: "sample" prints "sample" {soakSample}; "stop" ends the slots,
// waits (30 s at most) for the Client's records to empty and
// prints "stopped" {soakSample}. The worker exits when stdin closes.

// Slot kinds beyond the lock kinds of workload_test.go.
const (
	kindSemaphore lockKind = "semaphore" // semaphore.Semaphore, one permit
	kindExpirable lockKind = "expirable" // semaphore.Expirable, one watchdog permit
)

// soakConfig is the worker's configuration.
type soakConfig struct {
	Addr       string        `json:"addr"` // the lock server (its proxy)
	OracleAddr string        `json:"oracle"`
	ClientName string        `json:"client_name"` // CLIENT SETNAME of its connections
	Lease      time.Duration `json:"lease"`
	Slots      []lockKind    `json:"slots"` // one goroutine each
	Names      int           `json:"names"` // lock names per lock kind
}

// soakLockName is the i-th shared name of kind k. Semaphores have one.
func soakLockName(k lockKind, i int) string { return fmt.Sprintf("soak-%s-%d", k, i) }

// soakSample is what a worker reports of itself.
type soakSample struct {
	Pid        int              `json:"pid"`
	HeapAlloc  uint64           `json:"heap_alloc"` // after runtime.GC
	HeapInuse  uint64           `json:"heap_inuse"`
	Goroutines int              `json:"goroutines"`
	Stats      interlock.Stats  `json:"stats"`
	Acquired   int64            `json:"acquired"` // acquisitions so far
	Errors     map[string]int64 `json:"errors"`   // by class, so far
	Samples    []string         `json:"samples"`  // the first errors
	// Drained is, at the stop, how long the Client's records took to
	// empty once every slot returned (30 s: they did not).
	Drained time.Duration `json:"drained,omitempty"`
}

// soakCounters are a worker's running totals.
type soakCounters struct {
	acquired atomic.Int64
	mu       sync.Mutex
	errs     map[string]int64
	samples  []string
	profiles int // heap profiles written (INTERLOCK_SOAK_PROFILE)
}

// record counts one error of class.
func (s *soakCounters) record(class string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs[class]++
	if len(s.samples) < 10 && err != nil {
		s.samples = append(s.samples, class+": "+err.Error())
	}
}

// sample measures the process.
func (s *soakCounters) sample(c *interlock.Client) soakSample {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	out := soakSample{Pid: os.Getpid(), HeapAlloc: ms.HeapAlloc, HeapInuse: ms.HeapInuse,
		Goroutines: runtime.NumGoroutine(), Stats: c.Stats(), Acquired: s.acquired.Load(), Errors: map[string]int64{}}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range s.errs {
		out.Errors[k] = v
	}
	out.Samples = append(out.Samples, s.samples...)
	if dir := os.Getenv("INTERLOCK_SOAK_PROFILE"); dir != "" {
		s.profiles++
		writeHeapProfile(filepath.Join(dir, fmt.Sprintf("heap-%d-%03d.pprof", out.Pid, s.profiles)))
	}
	return out
}

// writeHeapProfile writes the heap profile to path, for INTERLOCK_SOAK_PROFILE;
// a failure only loses the profile.
func writeHeapProfile(path string) {
	f, err := os.Create(path)
	if err != nil {
		return
	}
	defer f.Close()
	_ = pprof.WriteHeapProfile(f)
}

func soakWorker() error {
	if os.Getenv("INTERLOCK_SOAK_PROFILE") != "" {
		// Profiles precise enough to tell a few thousand small objects.
		runtime.MemProfileRate = 4096
	}
	var cfg soakConfig
	if err := workerConfig(&cfg); err != nil {
		return err
	}
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{cfg.Addr}, ClientName: cfg.ClientName})
	if err != nil {
		return fmt.Errorf("lock server %s: %w", cfg.Addr, err)
	}
	defer rc.Close()
	c, err := interlock.New(rc, interlock.WithWatchdogTimeout(cfg.Lease))
	if err != nil {
		return err
	}
	defer c.Close()
	o, err := dialOracle(cfg.OracleAddr, false)
	if err != nil {
		return err
	}
	defer o.Close()
	cnt := &soakCounters{errs: map[string]int64{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i, k := range cfg.Slots {
		rnd := rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(i)))
		wg.Go(func() { soakSlot(ctx, c, o, cfg, k, rnd, cnt) })
	}
	stop := sync.OnceFunc(func() { cancel(); wg.Wait() })
	defer stop()
	cmds := workerCommands()
	workerSay("ready", nil)
	for m := range cmds {
		switch m.Verb {
		case "sample":
			workerSay("sample", cnt.sample(c))
		case "stop":
			stop()
			drained := soakDrain(c)
			s := cnt.sample(c)
			s.Drained = drained
			workerSay("stopped", s)
		default:
			return fmt.Errorf("unknown command %q", m.Verb)
		}
	}
	return nil
}

var _ = register("soak", soakWorker)

// soakDrain waits up to 30 s (several leases, and longer than a hold's
// clean-up retries) for c to hold, wait and undo nothing, and returns how
// long that took.
func soakDrain(c *interlock.Client) time.Duration {
	start := time.Now()
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for time.Since(start) < 30*time.Second {
		if s := c.Stats(); s == (interlock.Stats{}) {
			break
		}
		<-t.C
	}
	return time.Since(start)
}

// soakSlot runs one slot until ctx ends.
func soakSlot(ctx context.Context, c *interlock.Client, o *oracleClient, cfg soakConfig, k lockKind,
	rnd *rand.Rand, cnt *soakCounters,
) {
	w := workload{Lock: lockConfig{Kind: k, Watchdog: cfg.Lease, FairWait: 2 * time.Second}}.withDefaults()
	octx := interlock.WithOwner(ctx, interlock.NewOwnerID())
	var cycle func() error
	switch k {
	case kindSemaphore:
		s := semaphore.New(c, soakLockName(k, 0))
		cycle = func() error { return soakPlainPermit(octx, o, s, w, rnd, cnt) }
	case kindExpirable:
		e := semaphore.NewExpirable(c, soakLockName(k, 0))
		cycle = func() error { return soakExpirablePermit(octx, o, e, w, rnd, cnt) }
	default:
		lockers := map[string]locker{}
		cycle = func() error {
			name := soakLockName(k, rnd.IntN(cfg.Names))
			lk := lockers[name]
			if lk == nil {
				var err error
				if lk, err = newLocker(c, w.Lock, name); err != nil {
					return err
				}
				lockers[name] = lk
			}
			return soakLockCycle(octx, c, o, lk, name, w, rnd, cnt)
		}
	}
	for ctx.Err() == nil {
		if err := cycle(); err != nil && ctx.Err() == nil {
			cnt.record(errAcquire, err)
		}
		netWait(ctx, time.Duration(rnd.IntN(20))*time.Millisecond) // think time
	}
}

// soakAcquireTimeout bounds every acquisition.
const soakAcquireTimeout = 30 * time.Second

// soakSteps runs 1-3 steps of a section, each only if valid allows it,
// then leaves the section. Nothing in a section waits for the lock server:
// a holder that stays in its section past its hold's validity is an
// overlap. Oracle calls are not cut by the run's end: a section always
// leaves.
func soakSteps(octx context.Context, cnt *soakCounters, rnd *rand.Rand,
	enter func(context.Context) error, step func(context.Context) (bool, error), exit func(context.Context) error,
	valid func() (bool, string),
) {
	octx = context.WithoutCancel(octx)
	entered := false
	defer func() {
		if entered {
			if err := exit(octx); err != nil {
				cnt.record(errOracle, err)
			}
		}
	}()
	steps := 1 + rnd.IntN(3)
	for range steps {
		if ok, why := valid(); !ok {
			cnt.record(errLost, errors.New(why))
			return
		}
		if !entered {
			if err := enter(octx); err != nil {
				cnt.record(errOracle, err)
				return
			}
			entered = true
		}
		ok, err := step(octx)
		if err != nil {
			cnt.record(errOracle, err)
			return
		}
		if !ok {
			cnt.record(errRejected, nil)
			return
		}
	}
}

// soakLockCycle is one acquisition of a lock: lock (and, for the reentrant
// lock, half the time lock again), steps, unlock.
func soakLockCycle(octx context.Context, c *interlock.Client, o *oracleClient, lk locker, name string,
	w workload, rnd *rand.Rand, cnt *soakCounters,
) error {
	actx, cancel := context.WithTimeout(octx, soakAcquireTimeout)
	h, err := acquireHold(actx, c, lk, name, w.Lock.lease())
	cancel()
	if err != nil {
		return err
	}
	cnt.acquired.Add(1)
	budget := w.stepBudget()
	unlock := func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(octx), 10*time.Second)
		defer cancel()
		if err := h.Unlock(uctx); err != nil {
			cnt.record(errUnlock, err)
		}
	}
	// The reentrant lock re-enters half the time, and leaves the inner
	// hold after the section.
	reentered := false
	if w.Lock.Kind == kindRLock && rnd.IntN(2) == 0 {
		rctx, cancel := context.WithTimeout(h.ctx, soakAcquireTimeout)
		_, err := lk.Lock(rctx)
		cancel()
		if err != nil {
			cnt.record("reenter", err)
		}
		reentered = err == nil
	}
	sec := newSection(h, name)
	soakSteps(octx, cnt, rnd,
		func(ctx context.Context) error { return soakAccepted(o.Enter(ctx, sec)) },
		func(ctx context.Context) (bool, error) { return o.RMW(ctx, sec, w.jitter(rnd)) },
		func(ctx context.Context) error { return o.Exit(ctx, sec) },
		func() (bool, string) { return h.Valid(budget) })
	if reentered {
		unlock()
	}
	unlock()
	return nil
}

// soakAccepted turns a refused Enter into an error.
func soakAccepted(ok bool, err error) error {
	if err == nil && !ok {
		return errors.New("enter refused")
	}
	return err
}

// soakPlainPermit is one acquisition of a plain semaphore's permit.
func soakPlainPermit(octx context.Context, o *oracleClient, s *semaphore.Semaphore, w workload,
	rnd *rand.Rand, cnt *soakCounters,
) error {
	actx, cancel := context.WithTimeout(octx, soakAcquireTimeout)
	err := s.Acquire(actx, 1)
	cancel()
	if err != nil {
		return err
	}
	cnt.acquired.Add(1)
	sec := soakPermitSection(s.Name())
	soakSteps(octx, cnt, rnd,
		func(ctx context.Context) error { return o.SemEnter(ctx, sec, soakPermits) },
		func(context.Context) (bool, error) { return soakPermitStep(w, rnd) },
		func(ctx context.Context) error { return o.SemExit(ctx, sec) },
		func() (bool, string) { return true, "" })
	// A plain permit never comes back by itself, and a Release whose
	// context ends unanswered may not have been applied (semaphore's
	// "Receipts"): release with a context that outlives every fault, so
	// that the release is resent under its receipt after the heal.
	uctx, cancel := context.WithTimeout(context.WithoutCancel(octx), soakReleaseTimeout)
	defer cancel()
	if err := s.Release(uctx, 1); err != nil {
		cnt.record("release", err)
	}
	return nil
}

// soakReleaseTimeout bounds a plain semaphore's Release: longer than any
// fault of the soak.
const soakReleaseTimeout = 2 * time.Minute

// soakExpirablePermit is one acquisition of an expirable semaphore's
// permit, held by the watchdog and checked like a lock.
func soakExpirablePermit(octx context.Context, o *oracleClient, e *semaphore.Expirable, w workload,
	rnd *rand.Rand, cnt *soakCounters,
) error {
	actx, cancel := context.WithTimeout(octx, soakAcquireTimeout)
	ids, err := e.Acquire(actx, 1, 0)
	cancel()
	if err != nil {
		return err
	}
	cnt.acquired.Add(1)
	keep := context.WithoutCancel(octx)
	guard := e.Guard(keep, ids...)
	budget := w.stepBudget()
	sec := soakPermitSection(e.Name())
	soakSteps(octx, cnt, rnd,
		func(ctx context.Context) error { return o.SemEnter(ctx, sec, soakPermits) },
		func(context.Context) (bool, error) { return soakPermitStep(w, rnd) },
		func(ctx context.Context) error { return o.SemExit(ctx, sec) },
		func() (bool, string) {
			if guard.Err() != nil {
				return false, "guard: " + context.Cause(guard).Error()
			}
			if r := e.Remaining(ids[0]); r < budget {
				return false, fmt.Sprintf("remaining %v < budget %v", r.Round(time.Millisecond), budget)
			}
			return true, ""
		})
	uctx, cancel := context.WithTimeout(keep, 10*time.Second)
	defer cancel()
	if err := e.Release(uctx, ids...); err != nil {
		cnt.record(errUnlock, err)
	}
	return nil
}

// soakPermitStep is a step under a permit: the work's sleep. Two holders
// may hold permits at once, so the step touches no counter.
func soakPermitStep(w workload, rnd *rand.Rand) (bool, error) {
	t := time.NewTimer(w.jitter(rnd))
	<-t.C
	return true, nil
}

// soakPermitSection returns a section of the semaphore res, unique across
// processes (its id carries the pid as newSection's do).
func soakPermitSection(res string) Section {
	return Section{Res: res, Owner: "permit", ID: fmt.Sprintf("permit#%d.%d", os.Getpid(), sectionIDs.Add(1))}
}

// soakPermits is the number of permits of each soak semaphore.
const soakPermits = 2

// The semaphore oracle: a section holding a permit occupies the hash
// oracle:semocc:{res}; an Enter that finds more occupants than permits
// counts one overlap in oracle:stats, as the lock oracle does.
func oracleSemOccKey(res string) string { return "oracle:semocc:{" + res + "}" }

var oracleSemEnter = rueidis.NewLuaScript(`
redis.call('HSET', KEYS[1], ARGV[1], '1')
redis.call('HINCRBY', KEYS[2], 'enters', 1)
local n = redis.call('HLEN', KEYS[1])
if n > tonumber(ARGV[2]) then
  redis.call('HINCRBY', KEYS[2], 'overlaps', 1)
  redis.call('HSET', KEYS[2], 'last_overlap', ARGV[3] .. ': ' .. n .. ' permit holders, ' .. ARGV[2] .. ' permits')
end
return n
`)

var oracleSemExit = rueidis.NewLuaScript(`return redis.call('HDEL', KEYS[1], ARGV[1])`)

// SemEnter begins s on a semaphore of permits permits.
func (o *oracleClient) SemEnter(ctx context.Context, s Section, permits int) error {
	return oracleSemEnter.Exec(ctx, o.rc, []string{oracleSemOccKey(s.Res), oracleStats},
		[]string{s.ID, fmt.Sprint(permits), s.Res}).Error()
}

// SemExit ends s.
func (o *oracleClient) SemExit(ctx context.Context, s Section) error {
	return oracleSemExit.Exec(ctx, o.rc, []string{oracleSemOccKey(s.Res)}, []string{s.ID}).Error()
}
