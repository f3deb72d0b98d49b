package reliability

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/runtime"
)

// TestT08SentinelFailover is T8 (hazards H11, H12): Sentinel failovers
// under load. A master, one replica and three sentinels; two Clients in
// safe mode (one replica acknowledgement) on rueidis sentinel clients, four
// goroutines each, take fenced locks and run oracle sections. Each
// failover freezes the master with SIGSTOP until the sentinels promote
// the replica (3-6 s), resumes it 10 s after the freeze, and waits until
// the sentinels made it a replica of the new master.
//
// Acceptance: the oracle, with its token check off so that a late write
// would count, sees no overlap, no lost update and no stale write
// accepted; the tokens of each lock strictly increase over the successful
// acquisitions; an acquisition that fails leaves no hold of its owner on
// the server for longer than the lease (checked at once, and counted as
// unchecked when the server cannot be reached; a hold found is watched
// until it is gone: an acquisition whose reply was lost to a frozen server
// is taken back by the Client's clean-up, which may have to wait for the
// failover). Acquire latency is logged (p99).
//
// The plan asks for 50 failovers; one takes about 20 s, so they are
// spread over t08Groups independent Sentinel groups that run at once,
// each with its own servers, oracle and load, and each stops at
// t08Budget and says how many it made.
func TestT08SentinelFailover(t *testing.T) {
	nightlyOnly(t)
	redistest.RequireProcess(t)
	for gi := range t08Groups {
		t.Run(fmt.Sprintf("group%d", gi), func(t *testing.T) {
			t.Parallel()
			t08Group(t, (t08Failovers+t08Groups-1)/t08Groups)
		})
	}
}

// t08Failovers is the plan's number of failovers; t08Groups how many
// Sentinel groups share them.
const t08Failovers, t08Groups = 50, 4

// t08Group runs failovers failovers of one Sentinel group under load.
func t08Group(t *testing.T, failovers int) {
	const (
		lease     = 2 * time.Second
		ackWait   = 500 * time.Millisecond
		frozen    = 10 * time.Second
		names     = 4
		perClient = 4
	)
	g := redistest.Sentinels(t, 3)
	t.Cleanup(func() {
		for _, s := range g.Servers() {
			_ = s.Resume()
		}
	})
	oracle := startOracle(t)
	oc, err := dialOracle(oracle.Addr(), false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(oc.Close)
	st := &t08State{maxToken: map[string]uint64{}, errs: map[string]int{}}
	runCtx, stopLoad := context.WithCancel(context.Background())
	defer stopLoad()
	var wg sync.WaitGroup
	for ci := range 2 {
		rc := g.Client(t)
		c, err := interlock.New(rc, interlock.WithWatchdogTimeout(lease), interlock.WithReplicaAcks(1, ackWait))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		for gi := range perClient {
			rnd := rand.New(rand.NewPCG(uint64(ci), uint64(gi)))
			wg.Go(func() { st.loop(runCtx, c, oc, names, lease, rnd) })
		}
	}
	settle := func(d time.Duration) {
		tm := time.NewTimer(d)
		<-tm.C
	}
	start := time.Now()
	var promoted, rejoined []time.Duration
	done := 0
	for done < failovers && time.Since(start) < t08Budget {
		settle(2 * time.Second) // healthy traffic
		old := g.Master()
		if err := old.Pause(); err != nil {
			t.Fatal(err)
		}
		paused := time.Now()
		st.mark(fmt.Sprintf("failover %d", done))
		fctx, fcancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := g.WaitFailover(fctx)
		fcancel()
		if err != nil {
			_ = old.Resume()
			t.Fatalf("failover %d: %v", done, err)
		}
		promoted = append(promoted, time.Since(paused))
		settle(frozen - time.Since(paused))
		if err := old.Resume(); err != nil {
			t.Fatal(err)
		}
		resumed := time.Now()
		rctx, rcancel := context.WithTimeout(context.Background(), 60*time.Second)
		err = g.WaitReplicaOfMaster(rctx, old)
		rcancel()
		if err != nil {
			t.Fatalf("failover %d: %v", done, err)
		}
		rejoined = append(rejoined, time.Since(resumed))
		done++
	}
	settle(2 * time.Second)
	stopLoad()
	wg.Wait()

	v := oracle.Verify(t, -1)
	st.mu.Lock()
	defer st.mu.Unlock()
	t.Logf("T08 %d failovers in %v (plan: %d; budget %v): promotion after %s; old master a replica again after %s",
		done, time.Since(start).Round(time.Second), failovers, t08Budget, procDurations(promoted), procDurations(rejoined))
	t.Logf("T08 acquisitions: %d ok, %d failed %v; acquire latency ok: %s; all attempts: %s; unlocks sent again %d",
		len(st.okLatency), st.failed, st.errs, procDurations(st.okLatency), procDurations(st.allLatency), st.unlockRetries)
	t.Logf("T08 failed acquisitions: %d left no hold, %d left one that was gone within the lease (after %s), %d left one for longer, %d unchecked (server unreachable); token regressions %d; sections %d, writes %d; oracle %v",
		st.noKey, len(st.goneLate), procDurations(st.goneLate), st.keyLeft, st.unchecked, st.regressions, st.sections, st.writes, v)
	if st.firstOther != "" {
		t.Logf("T08 first other acquire failure: %s", st.firstOther)
	}
	if st.regressions != 0 {
		t.Errorf("token regressions: %d (first: %s)", st.regressions, st.firstRegression)
	}
	if st.keyLeft != 0 {
		t.Errorf("failed acquisitions that left a hold: %d (first: %s)", st.keyLeft, st.firstKeyLeft)
	}
	if len(st.okLatency) == 0 || st.sections == 0 {
		t.Errorf("no work was done")
	}
}

// t08Budget bounds the failover loop of T8.
const t08Budget = 6 * time.Minute

// t08State is what T8's goroutines record.
type t08State struct {
	mu                        sync.Mutex
	maxToken                  map[string]uint64
	regressions               int
	firstRegression           string
	okLatency, allLatency     []time.Duration
	failed                    int
	errs                      map[string]int
	noKey, keyLeft, unchecked int
	firstKeyLeft              string
	goneLate                  []time.Duration // holds a failed acquisition left, until they were gone
	sections, writes          int
	unlockRetries             int    // unlocks sent again after no answer
	firstOther                string // the first failure neither replication nor deadline
	phase                     string
}

// mark names the phase for later messages.
func (s *t08State) mark(phase string) {
	s.mu.Lock()
	s.phase = phase
	s.mu.Unlock()
}

// loop takes random locks and works under them until ctx ends.
func (s *t08State) loop(ctx context.Context, c *interlock.Client, oc *oracleClient, names int, lease time.Duration, rnd *rand.Rand) {
	w := workload{Lock: lockConfig{Kind: kindFenced, Watchdog: lease}}.withDefaults()
	budget := w.stepBudget()
	octx := interlock.WithOwner(ctx, interlock.NewOwnerID())
	owner, err := c.Owner(octx)
	if err != nil {
		panic(err) // WithOwner was just set
	}
	backoff := time.NewTimer(0)
	defer backoff.Stop()
	for ctx.Err() == nil {
		name := fmt.Sprintf("t08-%d", rnd.IntN(names))
		lk, err := newLocker(c, w.Lock, name)
		if err != nil {
			panic(err) // a fixed, valid name
		}
		actx, cancel := context.WithTimeout(octx, 3*time.Second)
		began := time.Now()
		h, err := acquireHold(actx, c, lk, name, lease)
		took := time.Since(began)
		cancel()
		if ctx.Err() != nil {
			if h != nil {
				s.unlock(h)
			}
			return
		}
		s.mu.Lock()
		s.allLatency = append(s.allLatency, took)
		s.mu.Unlock()
		if err != nil {
			s.failedAcquire(c, name, owner, lease, err)
			backoff.Reset(50 * time.Millisecond)
			<-backoff.C
			continue
		}
		s.mu.Lock()
		s.okLatency = append(s.okLatency, took)
		if h.Token <= s.maxToken[name] {
			s.regressions++
			if s.firstRegression == "" {
				s.firstRegression = fmt.Sprintf("%s: token %d after %d (%s)", name, h.Token, s.maxToken[name], s.phase)
			}
		}
		s.maxToken[name] = max(s.maxToken[name], h.Token)
		s.mu.Unlock()
		s.work(ctx, oc, h, w, budget, rnd)
		s.unlock(h)
	}
}

// failedAcquire classifies a failed Lock and checks that it left no hold
// of owner on name: at once, and when one is there (the acquisition's
// reply was lost while the server was frozen, and the clean-up that takes
// it back is still retrying), again until it is gone, which must be
// within the lease, since nothing renews it.
func (s *t08State) failedAcquire(c *interlock.Client, name, owner string, lease time.Duration, lockErr error) {
	class := "other"
	switch {
	case errors.Is(lockErr, interlock.ErrReplication):
		class = "replication"
	case errors.Is(lockErr, context.DeadlineExceeded):
		class = "deadline"
	}
	failedAt := time.Now()
	rc := runtime.Of(c).RC
	held := func() (bool, error) {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return rc.Do(cctx, rc.B().Hexists().Key(name).Field(owner).Build()).AsBool()
	}
	left, err := held()
	goneAfter := time.Duration(0)
	if err == nil && left {
		for time.Since(failedAt) < lease+time.Second {
			tm := time.NewTimer(100 * time.Millisecond)
			<-tm.C
			if still, err := held(); err == nil && !still {
				goneAfter = time.Since(failedAt)
				break
			}
		}
	}
	diag := ""
	if err == nil && left && goneAfter == 0 {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		count, _ := rc.Do(cctx, rc.B().Hget().Key(name).Field(owner).Build()).ToString()
		pttl, _ := rc.Do(cctx, rc.B().Pttl().Key(name).Build()).AsInt64()
		cancel()
		diag = fmt.Sprintf("%v later the owner's count is %q, PTTL %d ms", time.Since(failedAt).Round(time.Millisecond), count, pttl)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failed++
	s.errs[class]++
	if class == "other" && s.firstOther == "" {
		s.firstOther = fmt.Sprintf("%s: %v (%s)", name, lockErr, s.phase)
	}
	switch {
	case err != nil:
		s.unchecked++
	case left && goneAfter == 0:
		s.keyLeft++
		if s.firstKeyLeft == "" {
			s.firstKeyLeft = fmt.Sprintf("%s after %v (%s); %s", name, lockErr, s.phase, diag)
		}
	case left:
		s.goneLate = append(s.goneLate, goneAfter)
	default:
		s.noKey++
	}
}

// work runs up to 5 oracle steps under h, checking it before each.
func (s *t08State) work(ctx context.Context, oc *oracleClient, h *hold, w workload, budget time.Duration, rnd *rand.Rand) {
	sec := newSection(h, h.Name)
	entered := false
	writes := 0
	for step := 0; step < 5 && ctx.Err() == nil; step++ {
		if ok, _ := h.Valid(budget); !ok {
			break
		}
		if !entered {
			if ok, err := oc.Enter(ctx, sec); err != nil || !ok {
				break
			}
			entered = true
		}
		ok, err := oc.RMW(ctx, sec, w.jitter(rnd))
		if err != nil || !ok {
			break
		}
		writes++
	}
	if entered {
		_ = oc.Exit(context.WithoutCancel(ctx), sec)
	}
	s.mu.Lock()
	if entered {
		s.sections++
	}
	s.writes += writes
	s.mu.Unlock()
}

// unlock releases h. An unlock without an answer (the server froze) leaves
// the hold as it was, still renewed: it is sent again until the server
// answers, so that the owner never re-enters a hold it believes released
// (a failed re-entry would then look like a hold left behind).
func (s *t08State) unlock(h *hold) {
	retry := time.NewTimer(0)
	defer retry.Stop()
	for end := time.Now().Add(time.Minute); time.Now().Before(end); {
		uctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		err := h.Unlock(uctx)
		cancel()
		if err == nil || errors.Is(err, interlock.ErrReplication) || errors.Is(err, interlock.ErrNotHeld) {
			return
		}
		s.mu.Lock()
		s.unlockRetries++
		s.mu.Unlock()
		retry.Reset(100 * time.Millisecond)
		<-retry.C
	}
}
