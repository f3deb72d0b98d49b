package reliability

// T17 (docs/reliability.md, hazard H15): a 3+3 cluster while 5,000 locks
// spread over the slots are held for three minutes (the nightly cut of the
// plan's five), with sharded and with classic publishing, each variant on a
// cluster of its own. After 30 s, 1,000 slots move from one master to
// another (keys and all); after 90 s, one shard fails over with CLUSTER
// FAILOVER. Meanwhile pairs of goroutines hand locks to each other and
// time each wake-up (unlock called → the waiter's Lock returned).
//
// Acceptance: no CROSSSLOT or NOSCRIPT error reaches a caller (Lock,
// Unlock, hand-offs); a hold is lost only if it lived on the shard that
// failed over (a manual failover waits for the replica to catch up, so
// none is expected); wake-up p99 <= 50 ms in both publish modes.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/rlock"
)

const (
	t17Lease      = 3 * time.Second
	t17Workers    = 32
	t17Pairs      = 8
	t17ReshardAt  = 30 * time.Second
	t17FailoverAt = 90 * time.Second
	t17Slots      = 1000
	t17WakeP99    = 50 * time.Millisecond
	t17PairPause  = 50 * time.Millisecond // between two hand-offs of a pair
	// t17WaiterSetup is how long the waiter gets to subscribe, try again
	// and park before the unlock: generous, so that on a loaded host the
	// time measured is the wake-up and not the waiter's set-up.
	t17WaiterSetup = 100 * time.Millisecond
)

// t17Errors counts errors that reached callers, by the first word of the
// Redis error ("" for errors that are not Redis replies).
type t17Errors struct {
	mu      sync.Mutex
	counts  map[string]int
	samples []string
}

func (e *t17Errors) add(op string, err error) {
	if err == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.counts == nil {
		e.counts = map[string]int{}
	}
	e.counts[nhRedisErrPrefix(err)]++
	if len(e.samples) < 10 {
		e.samples = append(e.samples, op+": "+err.Error())
	}
}

func (e *t17Errors) get(prefix string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.counts[prefix]
}

func (e *t17Errors) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.counts) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(e.counts))
	for k := range e.counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		name := k
		if name == "" {
			name = "other"
		}
		fmt.Fprintf(&b, "%s=%d ", name, e.counts[k])
	}
	return strings.TrimSpace(b.String()) + fmt.Sprintf(" (samples: %q)", e.samples)
}

// t17Observer records renewal failures (not seen by callers) and losses.
type t17Observer struct {
	failed t17Errors
	lost   atomic.Int64
}

// Observe ignores pub/sub failures: T17 judges renewals and losses.
func (o *t17Observer) Observe(_ context.Context, e interlock.Event) {
	switch {
	case e.Op == interlock.OpRenew && e.Failures > 0:
		o.failed.add("renew", e.Err)
	case e.Op == interlock.OpLost:
		o.lost.Add(1)
	}
}

func TestT17Cluster(t *testing.T) {
	nightlyOnly(t)
	locks := sized(0, 5000)
	hold := 3 * time.Minute
	for _, v := range []struct {
		name string
		mode interlock.PubSubMode
	}{{"sharded", interlock.PubSubSharded}, {"classic", interlock.PubSubClassic}} {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			t17Run(t, v.name, v.mode, locks, hold)
		})
	}
}

func t17Run(t *testing.T, variant string, mode interlock.PubSubMode, locks int, holdFor time.Duration) {
	cluster := redistest.ClusterWith(t, redistest.WithReplicas(1))
	rc := cluster.Client(t)
	obs := &t17Observer{}
	c, err := interlock.New(rc, interlock.WithWatchdogTimeout(t17Lease), interlock.WithPubSubMode(mode), interlock.WithObserver(obs))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), holdFor+2*time.Minute)
	defer cancel()
	var callers t17Errors

	// Take the locks.
	type held struct {
		m     *rlock.Mutex
		owner context.Context
		guard context.Context
	}
	holds := make([]held, locks)
	owners := make([]context.Context, t17Workers)
	for w := range owners {
		owners[w] = interlock.WithOwner(ctx, interlock.NewOwnerID())
	}
	var wg sync.WaitGroup
	var acquireFailed atomic.Int64
	for w := range t17Workers {
		wg.Go(func() {
			for i := w; i < locks; i += t17Workers {
				m := rlock.New(c, fmt.Sprintf("t17-%s-%d", variant, i))
				if err := m.Lock(owners[w]); err != nil {
					callers.add("lock", err)
					acquireFailed.Add(1)
					continue
				}
				holds[i] = held{m: m, owner: owners[w], guard: m.Guard(context.WithoutCancel(owners[w]))}
			}
		})
	}
	wg.Wait()
	if n := acquireFailed.Load(); n > 0 {
		t.Fatalf("%d of %d locks not acquired: %v", n, locks, &callers)
	}
	start := time.Now()

	// Hand-offs until the hold ends.
	handCtx, stopHand := context.WithCancel(ctx)
	var wakeMu sync.Mutex
	var wakes []time.Duration
	var wakeAt []time.Time // when each wake-up's unlock was called
	var pairs sync.WaitGroup
	for p := range t17Pairs {
		pairs.Go(func() {
			m := rlock.New(c, fmt.Sprintf("t17-%s-pair-%d", variant, p))
			a := interlock.WithOwner(ctx, interlock.NewOwnerID())
			b := interlock.WithOwner(ctx, interlock.NewOwnerID())
			for handCtx.Err() == nil {
				at := time.Now()
				d, err := t17HandOff(ctx, m, a, b)
				if err != nil {
					callers.add("hand-off", err)
				} else {
					wakeMu.Lock()
					wakes = append(wakes, d)
					wakeAt = append(wakeAt, at)
					wakeMu.Unlock()
				}
				a, b = b, a
				pause := time.NewTimer(t17PairPause)
				select {
				case <-pause.C:
				case <-handCtx.Done():
					pause.Stop()
				}
			}
		})
	}
	defer func() { stopHand(); pairs.Wait() }()

	// The faults.
	wait := func(at time.Duration) {
		tm := time.NewTimer(time.Until(start.Add(at)))
		<-tm.C
	}
	wait(t17ReshardAt)
	masters := cluster.Masters()
	if len(masters) != 3 {
		t.Fatalf("%d masters", len(masters))
	}
	rs := time.Now()
	if err := cluster.Reshard(ctx, masters[0], masters[1], t17Slots); err != nil {
		t.Fatalf("reshard: %v", err)
	}
	reshardTook := time.Since(rs)
	wait(t17FailoverAt)
	victim := masters[2]
	var replica *redistest.Server
	for _, r := range cluster.Replicas() {
		if cluster.MasterOf(r) == victim {
			replica = r
		}
	}
	if replica == nil {
		t.Fatalf("no replica of %s", victim.Addr())
	}
	onVictim := make([]bool, locks)
	for i := range holds {
		onVictim[i] = cluster.NodeForKey(holds[i].m.Name()) == victim
	}
	fs := time.Now()
	if err := cluster.Failover(ctx, replica); err != nil {
		t.Fatalf("failover: %v", err)
	}
	failoverTook := time.Since(fs)
	wait(holdFor)
	stopHand()
	pairs.Wait()

	// Judge the holds, then release them.
	var lostVictim, lostElsewhere, victimLocks int
	for i, h := range holds {
		if onVictim[i] {
			victimLocks++
		}
		if h.guard.Err() == nil {
			continue
		}
		if onVictim[i] {
			lostVictim++
		} else {
			lostElsewhere++
			if lostElsewhere <= 5 {
				t.Errorf("lock %s lost on an unfailed shard: %v", h.m.Name(), context.Cause(h.guard))
			}
		}
	}
	var unlockFailed atomic.Int64
	for w := range t17Workers {
		wg.Go(func() {
			for i := w; i < locks; i += t17Workers {
				h := holds[i]
				uctx, cancel := context.WithTimeout(h.owner, 10*time.Second)
				err := h.m.Unlock(uctx)
				cancel()
				if err != nil && !(h.guard.Err() != nil && errors.Is(err, interlock.ErrNotHeld)) {
					callers.add("unlock", err)
					unlockFailed.Add(1)
				}
			}
		})
	}
	wg.Wait()

	// Wake-ups within a few seconds of a fault, and the others.
	near := func(at, from time.Time, took time.Duration) bool {
		return at.After(from.Add(-time.Second)) && at.Before(from.Add(took+5*time.Second))
	}
	wakeMu.Lock()
	var calm, faulted []time.Duration
	for i, d := range wakes {
		if near(wakeAt[i], rs, reshardTook) || near(wakeAt[i], fs, failoverTook) {
			faulted = append(faulted, d)
		} else {
			calm = append(calm, d)
		}
	}
	summary := nhSummary(wakes)
	p99 := nhQuantile(wakes, 0.99)
	wakeMu.Unlock()
	load, _ := os.ReadFile("/proc/loadavg")
	crossslot, noscript := callers.get("CROSSSLOT"), callers.get("NOSCRIPT")
	t.Logf("T17 %s: %d locks held %v; reshard of %d slots took %v, failover of %s took %v (%d locks on it); lost: %d on the failed shard, %d elsewhere; errors reaching callers: %v; CROSSSLOT %d, NOSCRIPT %d; unlock failures %d; renewal failures (not seen by callers): %v; wake-up %s (bound p99 %v); away from the faults %s, within 5 s of them %s; load average %s",
		variant, locks, holdFor, t17Slots, reshardTook.Round(time.Millisecond), victim.Addr(), failoverTook.Round(time.Millisecond),
		victimLocks, lostVictim, lostElsewhere, &callers, crossslot, noscript, unlockFailed.Load(), &obs.failed, summary, t17WakeP99,
		nhSummary(calm), nhSummary(faulted), strings.TrimSpace(string(load)))
	if crossslot != 0 || noscript != 0 {
		t.Errorf("%d CROSSSLOT and %d NOSCRIPT errors reached callers", crossslot, noscript)
	}
	if lostElsewhere != 0 {
		t.Errorf("%d locks lost on shards that did not fail over", lostElsewhere)
	}
	if p99 > t17WakeP99 {
		t.Errorf("wake-up p99 %v, want <= %v", p99, t17WakeP99)
	}
	if unlockFailed.Load() != 0 {
		t.Errorf("%d unlocks failed", unlockFailed.Load())
	}
}

// t17HandOff: a takes m; b starts waiting and parks; a unlocks; it returns
// the time from the unlock call until b's Lock returned; b then unlocks.
func t17HandOff(ctx context.Context, m *rlock.Mutex, a, b context.Context) (time.Duration, error) {
	if err := m.Lock(a); err != nil {
		return 0, fmt.Errorf("holder: %w", err)
	}
	bctx, cancel := context.WithTimeout(b, 10*time.Second)
	defer cancel()
	got := make(chan error, 1)
	var at atomic.Int64
	go func() {
		err := m.Lock(bctx)
		at.Store(time.Now().UnixNano())
		got <- err
	}()
	setup := time.NewTimer(t17WaiterSetup)
	<-setup.C
	unlocked := time.Now()
	uerr := m.Unlock(a)
	werr := <-got
	if werr != nil {
		return 0, errors.Join(fmt.Errorf("waiter: %w", werr), uerr)
	}
	d := time.Unix(0, at.Load()).Sub(unlocked)
	uctx, ucancel := context.WithTimeout(b, 10*time.Second)
	defer ucancel()
	if err := errors.Join(uerr, m.Unlock(uctx)); err != nil {
		return 0, err
	}
	return d, nil
}
