package reliability

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redisproc"
	"github.com/interlock-go/interlock/internal/redistest"
)

// Replication loss, shared by T9 and T26.
//
// One run: replica P of the set is cut off (PauseReplication); client A
// takes a "canary" lock of every kind on the master, with canaryAcks
// replica acknowledgements (0: safe mode off), and enters its oracle
// section; client S takes a "safe" lock of every kind with safeAcks,
// which the cut-off replica cannot all give, so S must be refused with
// nothing left on the master. Then the master is killed with SIGKILL,
// replica P resumed and promoted (REPLICAOF NO ONE), and client B takes
// every lock on it. A, which still believes it holds, checks its hold,
// writes and leaves its section after B entered: the oracle must see the
// overlap on every canary lock, and none on the safe ones.
//
// The servers are reused: after a run the killed master is restarted
// (empty) and the promoted replica made its replica again.

// procLossSetup configures a replication-loss test.
type procLossSetup struct {
	id          string // "T09", "T26": the prefix of names and log lines
	replicas    int    // replicas in the set
	cut         int    // the replica cut off and promoted
	canaryAcks  int    // A's WithReplicaAcks count (0: off)
	canaryWait  time.Duration
	safeAcks    int // S's WithReplicaAcks count
	safeWait    time.Duration
	lease       time.Duration
	runs        int
	canaryLabel string // how the log names the canary ("acks=0")
	safeLabel   string
}

// procLossTally counts the outcomes of one kind over all runs.
type procLossTally struct {
	canaryHeld     int // A acquired
	canaryBelieved int // A's hold was still valid after B acquired
	canaryBGot     int // B acquired the canary lock
	canaryOverlap  int // runs with an overlap on the canary lock
	tokenNotAbove  int // fenced: B's token was not above A's
	safeRefused    int // S's Lock failed with ErrReplication and left no key
	safeOverlap    int // runs with an overlap on the safe lock
	safeBGot       int // B acquired the safe lock
}

// procLossEnv is the servers and clients a replication-loss test reuses.
type procLossEnv struct {
	setup  procLossSetup
	rs     *redistest.ReplicaSet
	oracle *Oracle
	oc     *oracleClient
	tally  map[lockKind]*procLossTally
}

// procRunLoss runs a replication-loss test and checks its acceptance.
func procRunLoss(t *testing.T, setup procLossSetup) {
	redistest.RequireProcess(t)
	rs := redistest.Replicas(t, setup.replicas)
	oracle := startOracle(t)
	oc, err := dialOracle(oracle.Addr(), true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(oc.Close)
	env := &procLossEnv{
		setup: setup, rs: rs, oracle: oracle, oc: oc,
		tally: map[lockKind]*procLossTally{},
	}
	for _, k := range allKinds {
		env.tally[k] = &procLossTally{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(setup.runs)*30*time.Second)
	defer cancel()
	start := time.Now()
	var rebuild time.Duration
	for run := range setup.runs {
		if err := env.run(ctx, t, run); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		r := time.Now()
		if err := env.rebuild(ctx); err != nil {
			t.Fatalf("run %d: rebuilding the replica set: %v", run, err)
		}
		rebuild += time.Since(r)
	}
	elapsed := time.Since(start)
	n := setup.runs
	for _, k := range allKinds {
		c := env.tally[k]
		t.Logf("%s canary %s (%s): %d/%d overlaps; A held %d/%d and still believed it held after B acquired %d/%d; B acquired %d/%d",
			setup.id, k, setup.canaryLabel, c.canaryOverlap, n, c.canaryHeld, n, c.canaryBelieved, n, c.canaryBGot, n)
		if k.hasToken() {
			t.Logf("%s canary %s: B's token not above A's in %d/%d runs (the INCR was lost with the master)",
				setup.id, k, c.tokenNotAbove, n)
		}
		t.Logf("%s safe %s (%s): %d/%d refused, %d overlaps; B acquired %d/%d",
			setup.id, k, setup.safeLabel, c.safeRefused, n, c.safeOverlap, c.safeBGot, n)
		if c.canaryOverlap != n {
			t.Errorf("%s canary %s: overlap in %d of %d runs, want every run: the loss did not reproduce or the oracle is blind",
				setup.id, k, c.canaryOverlap, n)
		}
		if c.safeRefused != n || c.safeOverlap != 0 {
			t.Errorf("%s safe %s: %d of %d refused cleanly, %d overlaps; want %d and 0", setup.id, k, c.safeRefused, n, c.safeOverlap, n)
		}
	}
	t.Logf("%s: %d runs in %v (%v rebuilding the replica set)", setup.id, n, elapsed.Round(time.Millisecond), rebuild.Round(time.Millisecond))
}

// procLossHold is one lock of a run, canary or safe.
type procLossHold struct {
	kind   lockKind
	safe   bool
	name   string
	a      *hold // A's or S's hold, nil if refused
	aErr   error
	keyErr error // S refused but a key was left (or could not be checked)
	aSec   Section
	b      *hold
	bErr   error
	bSec   Section
}

// run is one replication-loss run.
func (e *procLossEnv) run(ctx context.Context, t *testing.T, run int) error {
	s := e.setup
	if err := e.oracle.Reset(ctx); err != nil {
		return err
	}
	if err := e.rs.PauseReplication(s.cut); err != nil {
		return err
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = e.rs.ResumeReplication(s.cut)
		}
	}()
	// Fresh connections every run: those of the last run went with the
	// killed master, and a script is never resent on a new one.
	rcA, err := procDial(e.rs.Master().Addr())
	if err != nil {
		return err
	}
	defer rcA.Close()
	cA, err := procNewClient(rcA, s.lease, s.canaryAcks, s.canaryWait)
	if err != nil {
		return err
	}
	defer cA.Close()
	cS, err := procNewClient(rcA, s.lease, s.safeAcks, s.safeWait)
	if err != nil {
		return err
	}
	defer cS.Close()
	var holds []*procLossHold
	for _, k := range allKinds {
		for _, safe := range []bool{false, true} {
			variant := "canary"
			if safe {
				variant = "safe"
			}
			holds = append(holds, &procLossHold{kind: k, safe: safe,
				name: fmt.Sprintf("%s-r%d-%s-%s", strings.ToLower(s.id), run, variant, k)})
		}
	}
	budget := workload{Lock: lockConfig{Watchdog: s.lease}}.withDefaults().stepBudget()

	// A and S acquire on the master, every lock at once.
	procEach(holds, func(h *procLossHold) {
		c := cA
		if h.safe {
			c = cS
		}
		h.a, h.aErr = procAcquire(ctx, c, h.kind, h.name, s.lease)
		if h.a != nil {
			h.aSec = newSection(h.a, h.name)
			if _, err := e.oc.Enter(ctx, h.aSec); err != nil {
				h.aErr = err
			}
			return
		}
		if h.safe && errors.Is(h.aErr, interlock.ErrReplication) {
			n, err := rcA.Do(ctx, rcA.B().Exists().Key(h.name).Build()).AsInt64()
			switch {
			case err != nil:
				h.keyErr = err
			case n != 0:
				h.keyErr = fmt.Errorf("key %s left on the master", h.name)
			}
		}
	})
	if n := cS.Stats().Holds; n != 0 {
		t.Errorf("run %d: %d renewal entries left after refused acquisitions", run, n)
	}

	// The master dies; the cut-off replica takes over.
	if err := e.rs.Master().Kill(); err != nil {
		return err
	}
	if err := e.rs.ResumeReplication(s.cut); err != nil {
		return err
	}
	resumed = true
	if err := e.rs.Promote(ctx, s.cut); err != nil {
		return err
	}
	rcB, err := procDial(e.rs.Replicas()[s.cut].Addr())
	if err != nil {
		return err
	}
	defer rcB.Close()
	cB, err := procNewClient(rcB, s.lease, 0, 0)
	if err != nil {
		return err
	}
	defer cB.Close()
	procEach(holds, func(h *procLossHold) {
		bctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		h.b, h.bErr = procAcquire(bctx, cB, h.kind, h.name, s.lease)
		if h.b != nil {
			h.bSec = newSection(h.b, h.name)
			_, h.bErr = e.oc.Enter(ctx, h.bSec)
		}
	})

	// A, still believing it holds, goes on; then B finishes.
	believed := map[string]bool{}
	var mu sync.Mutex
	procEach(holds, func(h *procLossHold) {
		if h.a == nil {
			return
		}
		ok, _ := h.a.Valid(budget)
		mu.Lock()
		believed[h.name] = ok
		mu.Unlock()
		if ok {
			if _, err := e.oc.RMW(ctx, h.aSec, time.Millisecond); err != nil {
				t.Errorf("run %d: %s: A's write: %v", run, h.name, err)
			}
		}
		if err := e.oc.Exit(ctx, h.aSec); err != nil {
			t.Errorf("run %d: %s: A's exit: %v", run, h.name, err)
		}
	})
	procEach(holds, func(h *procLossHold) {
		if h.b == nil || h.bErr != nil {
			return
		}
		if _, err := e.oc.RMW(ctx, h.bSec, time.Millisecond); err != nil {
			t.Errorf("run %d: %s: B's write: %v", run, h.name, err)
		}
		if err := e.oc.Exit(ctx, h.bSec); err != nil {
			t.Errorf("run %d: %s: B's exit: %v", run, h.name, err)
		}
		uctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := h.b.Unlock(uctx); err != nil {
			t.Errorf("run %d: %s: B's unlock: %v", run, h.name, err)
		}
	})

	v, err := e.oracle.Verdict(ctx)
	if err != nil {
		return err
	}
	overlapped := map[string]bool{}
	for _, o := range v.Check.Overlaps {
		overlapped[o.Res] = true
	}
	for _, h := range holds {
		c := e.tally[h.kind]
		if !h.safe {
			if h.a != nil {
				c.canaryHeld++
			} else {
				t.Logf("run %d: %s: A's Lock failed: %v", run, h.name, h.aErr)
			}
			if believed[h.name] {
				c.canaryBelieved++
			}
			if h.b != nil && h.bErr == nil {
				c.canaryBGot++
			} else {
				t.Logf("run %d: %s: B did not acquire: %v", run, h.name, h.bErr)
			}
			if overlapped[h.name] {
				c.canaryOverlap++
			}
			if h.a != nil && h.b != nil && h.kind.hasToken() && h.b.Token <= h.a.Token {
				c.tokenNotAbove++
			}
			continue
		}
		switch {
		case h.a != nil:
			t.Errorf("run %d: %s: S acquired although the cut-off replica could not acknowledge", run, h.name)
		case !errors.Is(h.aErr, interlock.ErrReplication):
			t.Errorf("run %d: %s: S's Lock failed with %v, want an error wrapping ErrReplication", run, h.name, h.aErr)
		case h.keyErr != nil:
			t.Errorf("run %d: %s: S refused, but %v", run, h.name, h.keyErr)
		default:
			c.safeRefused++
		}
		if h.b != nil && h.bErr == nil {
			c.safeBGot++
		} else {
			t.Errorf("run %d: %s: B did not acquire the safe lock: %v", run, h.name, h.bErr)
		}
		if overlapped[h.name] {
			c.safeOverlap++
			t.Errorf("run %d: %s: overlap on a safe lock: %v", run, h.name, v)
		}
	}
	if run == 0 {
		t.Logf("%s run 0: oracle %v", s.id, v)
	}
	return nil
}

// rebuild restores the set after a run: the killed master comes back
// empty, the promoted replica replicates from it again, and every replica
// is in sync.
func (e *procLossEnv) rebuild(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	m := e.rs.Master()
	if err := m.Restart(ctx); err != nil {
		return err
	}
	host, port, err := procSplitAddr(m.Addr())
	if err != nil {
		return err
	}
	replica := e.rs.Replicas()[e.setup.cut]
	if _, err := redisproc.Command(ctx, replica.Addr(), "REPLICAOF", host, port); err != nil {
		return fmt.Errorf("REPLICAOF on %s: %w", replica.Addr(), err)
	}
	return e.rs.WaitSynced(ctx)
}

// procSplitAddr splits "host:port".
func procSplitAddr(addr string) (host, port string, err error) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return "", "", fmt.Errorf("address %q has no port", addr)
	}
	if _, err := strconv.Atoi(addr[i+1:]); err != nil {
		return "", "", fmt.Errorf("address %q: %w", addr, err)
	}
	return addr[:i], addr[i+1:], nil
}

// procDial connects a rueidis client to the one server at addr.
func procDial(addr string) (rueidis.Client, error) {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true})
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", addr, err)
	}
	return rc, nil
}

// procNewClient returns an interlock Client on rc with the watchdog lease
// and, if acks > 0, safe mode. Close it when done.
func procNewClient(rc rueidis.Client, lease time.Duration, acks int, wait time.Duration) (*interlock.Client, error) {
	opts := []interlock.Option{interlock.WithWatchdogTimeout(lease)}
	if acks > 0 {
		opts = append(opts, interlock.WithReplicaAcks(acks, wait))
	}
	return interlock.New(rc, opts...)
}

// procAcquire takes the lock name of kind for a new owner on c; ctx bounds
// only the wait.
func procAcquire(ctx context.Context, c *interlock.Client, kind lockKind, name string, lease time.Duration) (*hold, error) {
	lk, err := newLocker(c, lockConfig{Kind: kind, Watchdog: lease, FairWait: 2 * time.Second}, name)
	if err != nil {
		return nil, err
	}
	octx := interlock.WithOwner(ctx, interlock.NewOwnerID())
	return acquireHold(octx, c, lk, name, lease)
}

// procEach runs f for every element of xs at once and returns when all
// calls have returned.
func procEach[T any](xs []T, f func(T)) {
	var wg sync.WaitGroup
	for _, x := range xs {
		wg.Go(func() { f(x) })
	}
	wg.Wait()
}
