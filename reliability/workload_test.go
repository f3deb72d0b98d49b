package reliability

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/fenced"
	"github.com/interlock-go/interlock/rlock"
	"github.com/interlock-go/interlock/rwlock"
)

// Lock kinds and the workload.
//
// lockKind names a kind; newLocker gives one named lock of it behind the
// small locker interface, so that tests and workers drive every kind the
// same way. acquireHold takes a lock for the owner in ctx and returns a
// hold that knows its guard, its fencing token and its remaining validity.
// runWorkload is the loop of the plan's sketch, run by N goroutines of a
// worker process; the worker "workload" runs one from its configuration.

// lockKind is a lock kind the workloads drive.
type lockKind string

const (
	kindRLock  lockKind = "rlock"    // rlock.Mutex
	kindFair   lockKind = "fairlock" // fairlock.Mutex
	kindWrite  lockKind = "rwlock"   // the write half of rwlock.Mutex
	kindFenced lockKind = "fenced"   // fenced.Mutex, with its token
)

// allKinds lists every kind, in the order tests run them as subtests.
var allKinds = []lockKind{kindRLock, kindFair, kindWrite, kindFenced}

// hasToken reports whether the kind hands out fencing tokens.
func (k lockKind) hasToken() bool { return k == kindFenced }

// lockConfig is the Client and lock configuration a worker uses; it
// travels to workers as JSON.
type lockConfig struct {
	// Addr is the lock server's address.
	Addr string `json:"addr"`
	// Kind is the lock kind.
	Kind lockKind `json:"kind"`
	// Watchdog is the Client's watchdog timeout: the lease of every hold
	// (0: interlock's default).
	Watchdog time.Duration `json:"watchdog"`
	// FairWait is fairlock's WithWaitTimeout (0: its default).
	FairWait time.Duration `json:"fair_wait"`
}

// lease is the lease holds get under c.
func (c lockConfig) lease() time.Duration {
	if c.Watchdog == 0 {
		return interlock.DefaultWatchdogTimeout
	}
	return c.Watchdog
}

// locker is one named lock of one kind on one Client, reduced to what the
// workloads need. Every method acts for the owner in ctx.
type locker interface {
	// Lock waits for a watchdog hold and returns its fencing token (0 for
	// kinds without one).
	Lock(ctx context.Context) (uint64, error)
	// Unlock releases one hold.
	Unlock(ctx context.Context) error
	// Guard is cancelled when the hold ends (see rlock.Mutex.Guard).
	Guard(ctx context.Context) context.Context
}

type plainLocker interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
	Guard(ctx context.Context) context.Context
}

// untokened adapts a lock without fencing tokens.
type untokened struct{ plainLocker }

func (u untokened) Lock(ctx context.Context) (uint64, error) { return 0, u.plainLocker.Lock(ctx) }

// tokened adapts fenced.Mutex.
type tokened struct{ *fenced.Mutex }

func (t tokened) Lock(ctx context.Context) (uint64, error) { return t.LockToken(ctx) }

// newLocker returns the lock called name of cfg's kind on c.
func newLocker(c *interlock.Client, cfg lockConfig, name string) (locker, error) {
	switch cfg.Kind {
	case kindRLock:
		return untokened{rlock.New(c, name)}, nil
	case kindFair:
		var opts []fairlock.Option
		if cfg.FairWait > 0 {
			opts = append(opts, fairlock.WithWaitTimeout(cfg.FairWait))
		}
		return untokened{fairlock.New(c, name, opts...)}, nil
	case kindWrite:
		return untokened{rwlock.New(c, name).Write()}, nil
	case kindFenced:
		return tokened{fenced.New(c, name)}, nil
	}
	return nil, fmt.Errorf("unknown lock kind %q", cfg.Kind)
}

// dialLocks connects a worker to the lock server of cfg and returns the
// Client; close both (Client first) when done.
func dialLocks(cfg lockConfig) (rueidis.Client, *interlock.Client, error) {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{cfg.Addr}})
	if err != nil {
		return nil, nil, fmt.Errorf("lock server %s: %w", cfg.Addr, err)
	}
	var opts []interlock.Option
	if cfg.Watchdog > 0 {
		opts = append(opts, interlock.WithWatchdogTimeout(cfg.Watchdog))
	}
	c, err := interlock.New(rc, opts...)
	if err != nil {
		rc.Close()
		return nil, nil, err
	}
	return rc, c, nil
}

// hold is one acquisition.
type hold struct {
	lk    locker
	ctx   context.Context // carries the owner; use it for Unlock
	Owner string          // the owner string (the lock hash's field)
	Name  string
	Token uint64
	Guard context.Context // cancelled when the hold ends
	// Sent approximates when the successful acquire was sent; Acquired is
	// when Lock returned. Both are monotonic.
	Sent, Acquired time.Time
	// T is Acquired on CLOCK_MONOTONIC (monoNow), comparable across
	// processes.
	T     int64
	lease time.Duration
}

// replyAllowance is how long before Lock returned its successful attempt
// is assumed to have been sent: one round trip with room for a loaded host.
// The safety margin of the step budget covers a longer one.
const replyAllowance = 50 * time.Millisecond

// acquireHold takes lk for the owner in ctx (see interlock.WithOwner); ctx
// bounds only the wait: the hold keeps ctx's values, not its deadline.
func acquireHold(ctx context.Context, c *interlock.Client, lk locker, name string, lease time.Duration) (*hold, error) {
	owner, err := c.Owner(ctx)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	token, err := lk.Lock(ctx)
	if err != nil {
		return nil, err
	}
	keep := context.WithoutCancel(ctx)
	h := &hold{lk: lk, ctx: keep, Owner: owner, Name: name, Token: token, Acquired: time.Now(), T: monoNow(), lease: lease}
	h.Sent = h.Acquired.Add(-replyAllowance)
	if h.Sent.Before(start) {
		h.Sent = start
	}
	h.Guard = lk.Guard(keep)
	return h, nil
}

// remainingAPI is the lock method that reports a hold's remaining
// validity, when the kind has it.
type remainingAPI interface {
	Remaining(ctx context.Context) time.Duration
}

// Remaining is how long the hold is still certainly valid. It asks the
// lock (its Remaining method: last acquire or renewal send time + lease −
// now) where the kind has one; otherwise it estimates lease − time since
// the acquisition was sent, which ignores renewals, so holds that should
// outlive one lease look expired: keep such holds short.
func (h *hold) Remaining() time.Duration {
	if r, ok := unwrapLocker(h.lk).(remainingAPI); ok {
		return r.Remaining(h.ctx)
	}
	return h.lease - time.Since(h.Sent)
}

// RemainingSource says where Remaining comes from: "lock" or "estimate".
func (h *hold) RemainingSource() string {
	if _, ok := unwrapLocker(h.lk).(remainingAPI); ok {
		return "lock"
	}
	return "estimate"
}

// unwrapLocker returns the lock package's own type behind lk.
func unwrapLocker(lk locker) any {
	switch l := lk.(type) {
	case untokened:
		return l.plainLocker
	case tokened:
		return l.Mutex
	}
	return lk
}

// Valid reports whether a step that needs budget may start: the guard is
// not done and the remaining validity covers budget. reason says why not.
func (h *hold) Valid(budget time.Duration) (ok bool, reason string) {
	if err := h.Guard.Err(); err != nil {
		return false, "guard: " + context.Cause(h.Guard).Error()
	}
	if r := h.Remaining(); r < budget {
		return false, fmt.Sprintf("remaining %v < budget %v", r.Round(time.Millisecond), budget)
	}
	return true, ""
}

// Unlock releases the hold.
func (h *hold) Unlock(ctx context.Context) error {
	return h.lk.Unlock(interlock.WithOwner(ctx, mustOwnerID(h.ctx)))
}

// mustOwnerID returns the owner id in ctx (which acquireHold's caller set).
func mustOwnerID(ctx context.Context) int64 {
	id, err := interlock.OwnerID(ctx)
	if err != nil {
		panic(err) // the caller's ctx was set up with WithOwner
	}
	return id
}

// sectionIDs numbers critical sections within a process.
var sectionIDs atomic.Int64

// newSection returns a section of res for h, unique across processes.
func newSection(h *hold, res string) Section {
	return Section{Res: res, Owner: h.Owner, Token: h.Token,
		ID: fmt.Sprintf("%s#%d.%d", h.Owner, os.Getpid(), sectionIDs.Add(1))}
}

// safetyMargin is the part of a lease a step must leave unused (§6.5: at
// least 10 % of the lease, and 300 ms).
func safetyMargin(lease time.Duration) time.Duration { return max(lease/10, 300*time.Millisecond) }

// workload is what a worker process runs (the plan's §6.2 sketch): each of
// Goroutines goroutines, as its own owner, repeatedly takes a lock whose
// name it draws from Names, and in it runs up to Steps steps on the oracle
// resource of the same name: before each step it stops if the guard is done
// or the hold's remaining validity is below the step budget; a step is
// Enter (first step), Read, a JitterMin..JitterMax sleep, Write c+1; then
// Exit and Unlock. Cycles acquisitions are made in all, by whichever
// goroutine is free.
type workload struct {
	Lock       lockConfig    `json:"lock"`
	OracleAddr string        `json:"oracle"`
	Fence      bool          `json:"fence"` // oracle checks tokens (only meaningful for fenced)
	Names      []string      `json:"names"`
	Goroutines int           `json:"goroutines"`
	Cycles     int           `json:"cycles"`
	Steps      int           `json:"steps"`      // default 1
	JitterMin  time.Duration `json:"jitter_min"` // default 1ms
	JitterMax  time.Duration `json:"jitter_max"` // default 20ms
	// AcquireTimeout bounds each Lock (default 30s): a Lock that takes
	// longer counts as an "acquire" error.
	AcquireTimeout time.Duration `json:"acquire_timeout"`
	// Progress, when positive, makes the worker print a "progress" line
	// every Progress cycles.
	Progress int `json:"progress"`
}

// withDefaults fills the defaults in.
func (w workload) withDefaults() workload {
	if w.Steps == 0 {
		w.Steps = 1
	}
	if w.JitterMin == 0 && w.JitterMax == 0 {
		w.JitterMin, w.JitterMax = time.Millisecond, 20*time.Millisecond
	}
	if w.AcquireTimeout == 0 {
		w.AcquireTimeout = 30 * time.Second
	}
	if w.Goroutines == 0 {
		w.Goroutines = 1
	}
	return w
}

// stepBudget is the validity a step needs: its longest sleep, a few round
// trips, and the safety margin.
func (w workload) stepBudget() time.Duration {
	return w.JitterMax + 20*time.Millisecond + safetyMargin(w.Lock.lease())
}

// jitter draws a sleep for one step.
func (w workload) jitter(rnd *rand.Rand) time.Duration {
	if w.JitterMax <= w.JitterMin {
		return w.JitterMin
	}
	return w.JitterMin + time.Duration(rnd.Int64N(int64(w.JitterMax-w.JitterMin)))
}

// Error classes a workload records.
const (
	errAcquire  = "acquire"  // Lock failed
	errOracle   = "oracle"   // an oracle call failed
	errUnlock   = "unlock"   // Unlock failed
	errLost     = "lost"     // a step was skipped: guard done or validity short
	errRejected = "rejected" // the oracle refused a stale token
)

// workloadResult is what a workload did; a worker prints it as "result".
type workloadResult struct {
	Cycles     int64            `json:"cycles"` // acquisitions
	Writes     int64            `json:"writes"` // accepted oracle writes
	Errors     map[string]int64 `json:"errors"` // by class
	Samples    []string         `json:"samples"`
	Elapsed    time.Duration    `json:"elapsed"`
	Remaining  string           `json:"remaining"` // RemainingSource of the holds
	Goroutines int              `json:"goroutines"`
}

// errorCount is the number of errors of all classes.
func (r workloadResult) errorCount() int64 {
	var n int64
	for _, v := range r.Errors {
		n += v
	}
	return n
}

// add merges o into r; Elapsed becomes the longer one.
func (r *workloadResult) add(o workloadResult) {
	r.Cycles += o.Cycles
	r.Writes += o.Writes
	if r.Errors == nil {
		r.Errors = map[string]int64{}
	}
	for k, v := range o.Errors {
		r.Errors[k] += v
	}
	r.Samples = append(r.Samples, o.Samples...)
	r.Elapsed = max(r.Elapsed, o.Elapsed)
	if r.Remaining == "" {
		r.Remaining = o.Remaining
	}
	r.Goroutines += o.Goroutines
}

// recorder collects a workload's outcome from its goroutines.
type recorder struct {
	mu  sync.Mutex
	res workloadResult
}

// record counts one error of class, keeping the first few as samples.
func (r *recorder) record(class string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res.Errors[class]++
	if len(r.res.Samples) < 10 {
		msg := class
		if err != nil {
			msg += ": " + err.Error()
		}
		r.res.Samples = append(r.res.Samples, msg)
	}
}

// runWorkload runs w on c and the oracle o until done or ctx ends, and
// returns what happened. It starts w.Goroutines goroutines and returns
// after they all ended.
func runWorkload(ctx context.Context, c *interlock.Client, o *oracleClient, w workload) workloadResult {
	w = w.withDefaults()
	rec := &recorder{res: workloadResult{Errors: map[string]int64{}, Goroutines: w.Goroutines}}
	var cycles, writes atomic.Int64
	var source atomic.Value
	budget := w.stepBudget()
	start := time.Now()
	var wg sync.WaitGroup
	for g := range w.Goroutines {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(g)))
			octx := interlock.WithOwner(ctx, interlock.NewOwnerID())
			lockers := map[string]locker{}
			for ctx.Err() == nil {
				n := cycles.Add(1)
				if n > int64(w.Cycles) {
					cycles.Add(-1)
					return
				}
				name := w.Names[rnd.IntN(len(w.Names))]
				lk := lockers[name]
				if lk == nil {
					var err error
					if lk, err = newLocker(c, w.Lock, name); err != nil {
						rec.record(errAcquire, err)
						return
					}
					lockers[name] = lk
				}
				wrote, err := runCycle(octx, c, o, lk, name, w, budget, rnd, rec, &source)
				writes.Add(wrote)
				if err != nil {
					rec.record(errAcquire, err)
				}
				if w.Progress > 0 && n%int64(w.Progress) == 0 {
					workerSay("progress", map[string]int64{"cycles": n})
				}
			}
		})
	}
	wg.Wait()
	rec.res.Cycles = cycles.Load()
	rec.res.Writes = writes.Load()
	rec.res.Elapsed = time.Since(start)
	if s, ok := source.Load().(string); ok {
		rec.res.Remaining = s
	}
	return rec.res
}

// runCycle is one acquisition of the workload: lock, steps, exit, unlock.
// It returns the accepted writes, and the acquire error if Lock failed.
func runCycle(octx context.Context, c *interlock.Client, o *oracleClient, lk locker, name string,
	w workload, budget time.Duration, rnd *rand.Rand, rec *recorder, source *atomic.Value,
) (int64, error) {
	actx, cancel := context.WithTimeout(octx, w.AcquireTimeout)
	h, err := acquireHold(actx, c, lk, name, w.Lock.lease())
	cancel()
	if err != nil {
		return 0, err
	}
	source.CompareAndSwap(nil, h.RemainingSource())
	var wrote int64
	sec := newSection(h, name)
	entered := false
	for step := 0; step < w.Steps; step++ {
		if ok, why := h.Valid(budget); !ok {
			rec.record(errLost, errors.New(why))
			break
		}
		if !entered {
			ok, err := o.Enter(octx, sec)
			if err != nil {
				rec.record(errOracle, err)
				break
			}
			if !ok {
				rec.record(errRejected, nil)
				break
			}
			entered = true
		}
		ok, err := o.RMW(octx, sec, w.jitter(rnd))
		if err != nil {
			rec.record(errOracle, err)
			break
		}
		if !ok {
			rec.record(errRejected, nil)
			break
		}
		wrote++
	}
	if entered {
		if err := o.Exit(octx, sec); err != nil {
			rec.record(errOracle, err)
		}
	}
	uctx, cancel := context.WithTimeout(context.WithoutCancel(octx), 10*time.Second)
	defer cancel()
	if err := h.Unlock(uctx); err != nil {
		rec.record(errUnlock, err)
	}
	return wrote, nil
}

// workloadWorker is the worker "workload": it reads a workload from its
// configuration, connects, prints "ready", waits for "go", runs the
// workload, prints "result" with its workloadResult, and exits.
func workloadWorker() error {
	var w workload
	if err := workerConfig(&w); err != nil {
		return err
	}
	rc, c, err := dialLocks(w.Lock)
	if err != nil {
		return err
	}
	defer rc.Close()
	defer c.Close()
	o, err := dialOracle(w.OracleAddr, w.Fence)
	if err != nil {
		return err
	}
	defer o.Close()
	cmds := workerCommands()
	workerSay("ready", nil)
	if m, err := awaitCommand(cmds, time.Minute); err != nil || m.Verb != "go" {
		return fmt.Errorf("waiting for go: %v %v", m, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	workerSay("result", runWorkload(ctx, c, o, w))
	return nil
}

var _ = register("workload", workloadWorker)

// names returns n lock names with prefix: prefix-0 … prefix-(n-1).
func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + "-" + strconv.Itoa(i)
	}
	return slices.Clip(out)
}

// The worker "locker" takes and releases locks one command at a time, for
// tests that script who holds what (a holder to kill or pause, a waiter
// to time). Its configuration is a lockerConfig. It prints "ready", then
// runs each command in order:
//
//	lock {lockCmd}     prints "locking" {name, t} just before Lock,
//	                   "acquired" {holdMsg} after; with Section set, runs
//	                   one oracle section: Enter, Read, prints "read"
//	                   {name, value, t}, sleeps Pause, Write c+1, prints
//	                   "wrote" {name, ok, t}, checks the hold as a
//	                   workload step would and prints "checked"
//	                   {checkMsg}, Exit, prints "exited" {name}; with
//	                   Release set, unlocks and prints "released" {name,
//	                   err}. Otherwise it keeps the hold.
//	release {name}     unlocks a kept hold, prints "released" {name, err}.
//
// A failure prints "error" {error text} and ends the worker. EOF on stdin
// ends it normally (holds it kept are then left to expire).
type lockerConfig struct {
	Lock       lockConfig `json:"lock"`
	OracleAddr string     `json:"oracle"`
	Fence      bool       `json:"fence"`
}

// lockCmd is the payload of the locker's "lock" command.
type lockCmd struct {
	Name    string        `json:"name"`
	Section bool          `json:"section"`
	Pause   time.Duration `json:"pause"`
	Release bool          `json:"release"`
}

// holdMsg is the payload of "acquired".
type holdMsg struct {
	Name  string `json:"name"`
	Owner string `json:"owner"`
	Token uint64 `json:"token"`
	T     int64  `json:"t"` // monoNow when Lock returned
}

// stepMsg is the payload of "locking", "read", "wrote", "exited" and
// "released".
type stepMsg struct {
	Name  string `json:"name"`
	T     int64  `json:"t"`
	Value int64  `json:"value,omitempty"` // read: c
	OK    bool   `json:"ok,omitempty"`    // wrote: accepted
	Err   string `json:"err,omitempty"`   // released: Unlock's error
}

// checkMsg is the payload of "checked": the validity check after the
// section's write, as a workload makes before its next step.
type checkMsg struct {
	Name      string        `json:"name"`
	T         int64         `json:"t"`
	Valid     bool          `json:"valid"`
	Reason    string        `json:"reason"`
	GuardDone bool          `json:"guard_done"`
	Remaining time.Duration `json:"remaining"`
	Source    string        `json:"source"`
}

func lockerWorker() error {
	var cfg lockerConfig
	if err := workerConfig(&cfg); err != nil {
		return err
	}
	rc, c, err := dialLocks(cfg.Lock)
	if err != nil {
		return err
	}
	defer rc.Close()
	defer c.Close()
	o, err := dialOracle(cfg.OracleAddr, cfg.Fence)
	if err != nil {
		return err
	}
	defer o.Close()
	budget := workload{Lock: cfg.Lock}.withDefaults().stepBudget()
	ctx := context.Background()
	held := map[string]*hold{}
	release := func(name string) error {
		h := held[name]
		if h == nil {
			return fmt.Errorf("release %s: not held here", name)
		}
		delete(held, name)
		uctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		msg := stepMsg{Name: name}
		if err := h.Unlock(uctx); err != nil {
			msg.Err = err.Error()
		}
		msg.T = monoNow()
		workerSay("released", msg)
		return nil
	}
	cmds := workerCommands()
	workerSay("ready", nil)
	for m := range cmds {
		var err error
		switch m.Verb {
		case "lock":
			var cmd lockCmd
			if err = m.Decode(&cmd); err == nil {
				err = lockerLock(ctx, c, o, cfg.Lock, cmd, budget, held)
			}
			if err == nil && cmd.Release {
				err = release(cmd.Name)
			}
		case "release":
			var cmd lockCmd
			if err = m.Decode(&cmd); err == nil {
				err = release(cmd.Name)
			}
		default:
			err = fmt.Errorf("unknown command %q", m.Verb)
		}
		if err != nil {
			workerSay("error", err.Error())
			return err
		}
	}
	return nil
}

// lockerLock runs the locker's "lock" command up to the release.
func lockerLock(ctx context.Context, c *interlock.Client, o *oracleClient, cfg lockConfig,
	cmd lockCmd, budget time.Duration, held map[string]*hold,
) error {
	if held[cmd.Name] != nil {
		return fmt.Errorf("lock %s: already held here", cmd.Name)
	}
	lk, err := newLocker(c, cfg, cmd.Name)
	if err != nil {
		return err
	}
	octx := interlock.WithOwner(ctx, interlock.NewOwnerID())
	workerSay("locking", stepMsg{Name: cmd.Name, T: monoNow()})
	actx, cancel := context.WithTimeout(octx, 5*time.Minute)
	h, err := acquireHold(actx, c, lk, cmd.Name, cfg.lease())
	cancel()
	if err != nil {
		return fmt.Errorf("lock %s: %w", cmd.Name, err)
	}
	held[cmd.Name] = h
	workerSay("acquired", holdMsg{Name: h.Name, Owner: h.Owner, Token: h.Token, T: h.T})
	if !cmd.Section {
		return nil
	}
	sec := newSection(h, cmd.Name)
	if _, err := o.Enter(ctx, sec); err != nil {
		return err
	}
	v, err := o.Read(ctx, sec)
	if err != nil {
		return err
	}
	workerSay("read", stepMsg{Name: cmd.Name, T: monoNow(), Value: v})
	if cmd.Pause > 0 {
		t := time.NewTimer(cmd.Pause)
		<-t.C
	}
	wt := monoNow()
	ok, err := o.Write(ctx, sec, v+1)
	if err != nil {
		return err
	}
	workerSay("wrote", stepMsg{Name: cmd.Name, T: wt, OK: ok})
	valid, why := h.Valid(budget)
	workerSay("checked", checkMsg{Name: cmd.Name, T: monoNow(), Valid: valid, Reason: why,
		GuardDone: h.Guard.Err() != nil, Remaining: h.Remaining(), Source: h.RemainingSource()})
	if err := o.Exit(ctx, sec); err != nil {
		return err
	}
	workerSay("exited", stepMsg{Name: cmd.Name, T: monoNow()})
	return nil
}

var _ = register("locker", lockerWorker)
