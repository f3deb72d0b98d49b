package reliability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/interlock-go/interlock"
)

// The worker "proc-holders", shared by T2 and T3: each of its slots is a
// goroutine that, on "run" {prefix}, takes the lock prefix-<kind>-<i> of
// its kind and works under it until it loses it or the run stops. Two such
// processes with the same slots contend for every lock: one holds, the
// other waits.
//
// Working is the workload's step loop: before each step the hold is checked
// (guard not done, remaining validity at least the step budget); a step is
// an oracle read, a 1-20 ms sleep and a write. A check that finds too little
// validity waits until a renewal restores it or the guard ends: a Lock
// whose request waited in a frozen server's socket returns a hold whose
// validity, counted from the send time, has already run out. A watcher goroutine per hold
// samples Remaining every few milliseconds and records the hold's deadline
// (the last now+Remaining seen while positive, which is the last renewal's
// send time plus the lease) and when Remaining first read 0; the guard's
// end is timed too. A holder works until its guard ends (the hold is lost)
// or the run stops; then it leaves its section and unlocks, and a lost
// holder idles until "stop". A waiter
// whose Lock fails (the server is down) tries again after 20 ms.
//
// Messages: "acquired" {procAcquiredMsg} when a slot acquires; "hold"
// {procHoldMsg} when a hold ended (lost, or the run stopped); "stopped"
// {procStoppedMsg} once every slot returned after "stop".

// procHoldersConfig is the worker's configuration.
type procHoldersConfig struct {
	Addr       string        `json:"addr"`
	Lease      time.Duration `json:"lease"`
	OracleAddr string        `json:"oracle"`
	Fence      bool          `json:"fence"`
	Kinds      []lockKind    `json:"kinds"`
	PerKind    int           `json:"per_kind"` // lock names per kind
}

// procRunCmd is the payload of "run".
type procRunCmd struct {
	Prefix string `json:"prefix"`
}

// procAcquiredMsg is the payload of "acquired".
type procAcquiredMsg struct {
	Name  string `json:"name"`
	Token uint64 `json:"token"`
	T     int64  `json:"t"`
}

// procHoldMsg is the payload of "hold": one hold, from acquisition to end.
// Times are monoNow; 0 means never.
type procHoldMsg struct {
	Name      string `json:"name"`
	Pid       int    `json:"pid"`
	Token     uint64 `json:"token"`
	Acquired  int64  `json:"acquired"`
	Deadline  int64  `json:"deadline"`   // last renewal send + lease, as Remaining showed it
	Stopped   int64  `json:"stopped"`    // the first check that found the hold not valid for a step
	Reason    string `json:"reason"`     // why
	RemZero   int64  `json:"rem_zero"`   // Remaining first read 0 (Deadline stops moving then)
	GuardEnd  int64  `json:"guard_end"`  // the guard ended
	Cause     string `json:"cause"`      // the guard's cause
	Writes    int    `json:"writes"`     // oracle writes accepted
	Rejected  int    `json:"rejected"`   // oracle writes refused
	LastWrite int64  `json:"last_write"` // the last accepted write began
	UnlockErr string `json:"unlock_err"`

	// LostLate is how late the watcher's sample that first saw the loss
	// (lostAt) came: how long after the previous sample's tick was due.
	// It is the watcher's own scheduling, measured in the same run.
	LostLate int64 `json:"lost_late"`
}

// lostAt is when the holder could first know its hold was invalid: the
// guard's end or Remaining at 0, whichever came first; 0 if neither.
func (m procHoldMsg) lostAt() int64 {
	switch {
	case m.GuardEnd == 0:
		return m.RemZero
	case m.RemZero == 0:
		return m.GuardEnd
	}
	return min(m.GuardEnd, m.RemZero)
}

// procStoppedMsg is the payload of "stopped".
type procStoppedMsg struct {
	LockErrors int      `json:"lock_errors"`
	Samples    []string `json:"samples"`
}

// procWatchEvery is how often the watcher samples Remaining.
const procWatchEvery = 2 * time.Millisecond

func procHoldersWorker() error {
	var cfg procHoldersConfig
	if err := workerConfig(&cfg); err != nil {
		return err
	}
	rc, c, err := dialLocks(lockConfig{Addr: cfg.Addr, Watchdog: cfg.Lease})
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
	cmds := workerCommands()
	workerSay("ready", nil)
	var (
		stopRun func() // ends the current run; nil when none
		errMu   sync.Mutex
		errs    procStoppedMsg
	)
	defer func() {
		if stopRun != nil {
			stopRun()
		}
	}()
	for m := range cmds {
		switch m.Verb {
		case "run":
			var cmd procRunCmd
			if err := m.Decode(&cmd); err != nil {
				return err
			}
			if stopRun != nil {
				stopRun()
			}
			errs = procStoppedMsg{}
			stopRun = procStartRun(c, o, cfg, cmd.Prefix, func(n int, sample string) {
				errMu.Lock()
				defer errMu.Unlock()
				errs.LockErrors += n
				if sample != "" && len(errs.Samples) < 5 {
					errs.Samples = append(errs.Samples, sample)
				}
			})
			workerSay("started", nil)
		case "stop":
			if stopRun != nil {
				stopRun()
				stopRun = nil
			}
			errMu.Lock()
			workerSay("stopped", errs)
			errMu.Unlock()
		default:
			return fmt.Errorf("unknown command %q", m.Verb)
		}
	}
	return nil
}

// procStartRun starts one goroutine per slot and returns the function that
// ends them and waits for them.
func procStartRun(c *interlock.Client, o *oracleClient, cfg procHoldersConfig, prefix string,
	report func(lockErrors int, sample string),
) (stop func()) {
	rctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	seq := 0
	for _, k := range cfg.Kinds {
		for i := range cfg.PerKind {
			name := fmt.Sprintf("%s-%s-%d", prefix, k, i)
			seq++
			rnd := rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(seq)))
			wg.Go(func() { report(procSlot(rctx, c, o, cfg, k, name, rnd)) })
		}
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

var _ = register("proc-holders", procHoldersWorker)

// procSlot is one slot's run: acquire, work, report; until rctx ends. It
// returns how many Lock calls failed and the first failure.
func procSlot(rctx context.Context, c *interlock.Client, o *oracleClient, cfg procHoldersConfig,
	kind lockKind, name string, rnd *rand.Rand,
) (lockErrors int, sample string) {
	lcfg := lockConfig{Kind: kind, Watchdog: cfg.Lease, FairWait: 2 * time.Second}
	lk, err := newLocker(c, lcfg, name)
	if err != nil {
		return 1, err.Error()
	}
	w := workload{Lock: lcfg}.withDefaults()
	budget := w.stepBudget()
	octx := interlock.WithOwner(rctx, interlock.NewOwnerID())
	retry := time.NewTimer(0)
	defer retry.Stop()
	for rctx.Err() == nil {
		h, err := acquireHold(octx, c, lk, name, cfg.Lease)
		if err != nil {
			if rctx.Err() != nil {
				break
			}
			lockErrors++
			if sample == "" {
				sample = name + ": " + err.Error()
			}
			retry.Reset(20 * time.Millisecond)
			select {
			case <-rctx.Done():
			case <-retry.C:
			}
			continue
		}
		workerSay("acquired", procAcquiredMsg{Name: name, Token: h.Token, T: h.T})
		msg := procWork(rctx, o, h, w, budget, rnd)
		uctx, cancel := context.WithTimeout(context.WithoutCancel(octx), 5*time.Second)
		if err := h.Unlock(uctx); err != nil {
			msg.UnlockErr = err.Error()
		}
		cancel()
		workerSay("hold", msg)
		if msg.GuardEnd != 0 {
			<-rctx.Done() // a lost holder sits the rest of the run out
		}
	}
	return lockErrors, sample
}

// procWork works under h until its guard ends or rctx ends, and describes
// the hold.
func procWork(rctx context.Context, o *oracleClient, h *hold, w workload, budget time.Duration, rnd *rand.Rand) procHoldMsg {
	msg := procHoldMsg{Name: h.Name, Pid: os.Getpid(), Token: h.Token, Acquired: h.T}
	var mu sync.Mutex // guards msg's watcher fields
	done := make(chan struct{})
	var watcher sync.WaitGroup
	watcher.Go(func() {
		t := time.NewTicker(procWatchEvery)
		defer t.Stop()
		var prev int64 // when the last sample was taken
		for {
			now := monoNow()
			rem := h.Remaining()
			var late int64
			if prev != 0 {
				late = max(0, now-prev-int64(procWatchEvery))
			}
			prev = now
			mu.Lock()
			unknown := msg.RemZero == 0 && msg.GuardEnd == 0
			if rem > 0 && msg.RemZero == 0 {
				msg.Deadline = max(msg.Deadline, now+int64(rem))
			} else if rem == 0 && msg.RemZero == 0 {
				msg.RemZero = now
			}
			if msg.GuardEnd == 0 && h.Guard.Err() != nil {
				msg.GuardEnd = now
				msg.Cause = context.Cause(h.Guard).Error()
			}
			if unknown && (msg.RemZero != 0 || msg.GuardEnd != 0) {
				msg.LostLate = late
			}
			over := msg.RemZero != 0 && msg.GuardEnd != 0
			mu.Unlock()
			if over {
				return
			}
			select {
			case <-done:
				return
			case <-h.Guard.Done():
			case <-t.C:
			}
		}
	})
	sec := newSection(h, h.Name)
	entered := false
	recheck := time.NewTimer(0)
	defer recheck.Stop()
	for rctx.Err() == nil && h.Guard.Err() == nil {
		if ok, why := h.Valid(budget); !ok {
			// Not enough validity for a step: wait until a renewal
			// brings it back or the guard ends.
			mu.Lock()
			if msg.Stopped == 0 {
				msg.Stopped, msg.Reason = monoNow(), why
			}
			mu.Unlock()
			recheck.Reset(procWatchEvery)
			select {
			case <-rctx.Done():
			case <-h.Guard.Done():
			case <-recheck.C:
			}
			continue
		}
		if !entered {
			ok, err := o.Enter(rctx, sec)
			if err != nil || !ok {
				msg.Rejected++
				break
			}
			entered = true
		}
		began := monoNow()
		ok, err := o.RMW(rctx, sec, w.jitter(rnd))
		if err != nil {
			break
		}
		if !ok {
			msg.Rejected++
			break
		}
		msg.Writes++
		msg.LastWrite = began
	}
	if entered {
		_ = o.Exit(context.WithoutCancel(rctx), sec)
	}
	// Give the watcher a moment to time the guard, then stop it.
	grace := time.NewTimer(20 * procWatchEvery)
	select {
	case <-grace.C:
	case <-procWatcherDone(&watcher):
	}
	grace.Stop()
	close(done)
	watcher.Wait()
	return msg
}

// procWatcherDone returns a channel closed when wg's goroutines returned.
// The goroutine it starts ends with them.
func procWatcherDone(wg *sync.WaitGroup) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		wg.Wait()
		close(ch)
	}()
	return ch
}

// procPair is the two proc-holders processes of a T2 or T3 test.
type procPair struct {
	ws []*workerProc
}

// procStartPair starts two proc-holders processes with cfg.
func procStartPair(ctx context.Context, t *testing.T, cfg procHoldersConfig) *procPair {
	t.Helper()
	p := &procPair{}
	for range 2 {
		w := startWorker(t, "proc-holders", cfg)
		if _, err := w.Expect(ctx, "ready"); err != nil {
			t.Fatal(err)
		}
		p.ws = append(p.ws, w)
	}
	return p
}

// procEvent is a message from one of the pair.
type procEvent struct {
	from int
	msg  workerMsg
}

// next returns the next message of either process.
func (p *procPair) next(ctx context.Context) (procEvent, error) {
	select {
	case m, ok := <-p.ws[0].msgs:
		if !ok {
			return procEvent{}, fmt.Errorf("worker %v ended", p.ws[0])
		}
		return procEvent{0, m}, nil
	case m, ok := <-p.ws[1].msgs:
		if !ok {
			return procEvent{}, fmt.Errorf("worker %v ended", p.ws[1])
		}
		return procEvent{1, m}, nil
	case <-ctx.Done():
		return procEvent{}, fmt.Errorf("waiting for the workers: %w", ctx.Err())
	}
}

// procRunLog is what the pair reported during one run.
type procRunLog struct {
	acquired []procAcquiredMsg
	holds    []procHoldMsg
	stopped  []procStoppedMsg
}

// collect reads messages into l until done(l) or ctx ends.
func (p *procPair) collect(ctx context.Context, l *procRunLog, done func(*procRunLog) bool) error {
	for !done(l) {
		ev, err := p.next(ctx)
		if err != nil {
			return err
		}
		switch ev.msg.Verb {
		case "acquired":
			var m procAcquiredMsg
			if err := ev.msg.Decode(&m); err != nil {
				return err
			}
			l.acquired = append(l.acquired, m)
		case "hold":
			var m procHoldMsg
			if err := ev.msg.Decode(&m); err != nil {
				return err
			}
			l.holds = append(l.holds, m)
		case "stopped":
			var m procStoppedMsg
			if err := ev.msg.Decode(&m); err != nil {
				return err
			}
			l.stopped = append(l.stopped, m)
		case "error":
			return fmt.Errorf("worker %d: %s", ev.from, ev.msg.Payload)
		}
	}
	return nil
}

// send sends a command to both processes.
func (p *procPair) send(verb string, v any) error {
	for _, w := range p.ws {
		if err := w.SendJSON(verb, v); err != nil {
			return err
		}
	}
	return nil
}

// start begins a run and waits until one slot per lock holds (want locks).
func (p *procPair) start(ctx context.Context, prefix string, want int) (*procRunLog, error) {
	l := &procRunLog{}
	if err := p.send("run", procRunCmd{Prefix: prefix}); err != nil {
		return nil, err
	}
	err := p.collect(ctx, l, func(l *procRunLog) bool { return len(l.acquired) >= want })
	return l, err
}

// finish stops the run and collects the rest of its messages.
func (p *procPair) finish(ctx context.Context, l *procRunLog) error {
	if err := p.send("stop", struct{}{}); err != nil {
		return err
	}
	return p.collect(ctx, l, func(l *procRunLog) bool { return len(l.stopped) == 2 })
}

// initialHolds returns the holds acquired before t, one per lock name.
func (l *procRunLog) initialHolds(t int64) []procHoldMsg {
	var out []procHoldMsg
	for _, h := range l.holds {
		if h.Acquired < t {
			out = append(out, h)
		}
	}
	slices.SortFunc(out, func(a, b procHoldMsg) int { return int(a.Acquired - b.Acquired) })
	return out
}

// procDurations summarises durations: min, median, p99, max.
func procDurations(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	r := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	return fmt.Sprintf("min %v median %v p99 %v max %v", r(s[0]), r(s[len(s)/2]), r(s[procP99Index(len(s))]), r(s[len(s)-1]))
}

// procP99Index is the index of the 99th percentile in a sorted slice of n.
func procP99Index(n int) int {
	return min(n-1, (n*99+99)/100-1)
}
