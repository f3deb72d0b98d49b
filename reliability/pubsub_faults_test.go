package reliability

// T7 (docs/reliability.md, hazard H9): lost pub/sub wake-ups. 16 goroutines
// of one process, each its own owner, take and release one lock over and
// over, so that every release hands the lock to a waiter. A hand-off is
// timed from the moment the last holder started its Unlock to the moment
// the next Lock returned.
//
//   - Healthy: no fault; hand-off p99 <= 20 ms (100 ms in the PR gate,
//     latencyBound: a lost wake-up costs a lease, 1 s, either way).
//   - Faulted (fewer hand-offs, see nFaulted): the proxy drops every pub/sub message (DropPushes) and kills
//     the subscription connection every 200 ms (ResetSubscribers). No
//     waiter may hang (a Lock that does not return within t07Hung), and the
//     hand-off p99 must stay within the fallback bound: a waiter that hears
//     nothing tries again when the holder's PTTL (at most the lease) has
//     passed, or when the Hub re-subscribes after a reconnect and wakes
//     every waiter, whichever comes first; so p99 <= lease + 100 ms.
//   - Dropped: messages dropped, no reconnects: the PTTL alone wakes the
//     waiters, within the same bound. A queued fair waiter would wait for
//     the deadline of the waiter ahead of it, which can be minutes away;
//     the fair lock caps each of its waits at one second, or a quarter of
//     its wait timeout (2 s here), so that a waiter whose turn came
//     unannounced takes it before its own deadline drops it.
//
// For rwread, half of the goroutines are writers and half readers, and a
// hand-off is the first acquisition after the lock became free (readers
// joining readers are not hand-offs).

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/interlock-go/interlock"
)

const (
	// t07Waiters is how many goroutines contend.
	t07Waiters = 16
	// t07Lease is the watchdog lease, the PTTL a waiter falls back on.
	t07Lease = time.Second
	// t07Slack is what the fallback bound adds to the lease.
	t07Slack = 100 * time.Millisecond
	// t07HealthyP99 bounds the healthy hand-off p99 (latencyBound).
	t07HealthyP99 = 20 * time.Millisecond
	// t07ResetEvery is how often the subscription connection is killed.
	t07ResetEvery = 200 * time.Millisecond
	// t07Hung is how long a Lock may wait before it counts as hung: far
	// more than the 16 hand-offs ahead of it take. In the dropped run a
	// hand-off takes a lease and the waiters race for each one, so a
	// waiter may lose 30 in a row; there it is t07HungDropped.
	t07Hung        = 30 * time.Second
	t07HungDropped = 90 * time.Second
)

// t07Result is one run of one kind.
type t07Result struct {
	handoffs         []time.Duration
	hung             int
	longestWait      time.Duration // the longest Lock call that acquired
	lockErrs, unlock netErrTally
	resets           int
	elapsed          time.Duration
}

func TestT07PubSubFaults(t *testing.T) {
	n := sized(1000, 10000)
	// A faulted hand-off waits for the next resubscription (every
	// t07ResetEvery) or the PTTL: about 200 ms each, so the faulted runs
	// are smaller than the healthy ones.
	nFaulted := sized(200, 10000) // PR: 1,000 faulted hand-offs over the five kinds
	// The nightly faulted runs are spread over lanes, each its own server,
	// proxy and 16 waiters, that run at once: 10,000 hand-offs at 200 ms
	// each would take over half an hour in one.
	lanes := sized(1, 10)
	// With messages dropped and no reconnects, only the PTTL wakes a
	// waiter: a hand-off takes about a lease.
	nPTTL := sized(20, 100)
	healthyEnvs := make([]*netEnv, len(netKinds))
	faultedEnvs := make([][]*netEnv, len(netKinds))
	pttlEnvs := make([]*netEnv, len(netKinds))
	for i := range netKinds {
		healthyEnvs[i] = netStart(t, interlock.WithWatchdogTimeout(t07Lease))
		for range lanes {
			faultedEnvs[i] = append(faultedEnvs[i], netStart(t, interlock.WithWatchdogTimeout(t07Lease)))
		}
		pttlEnvs[i] = netStart(t, interlock.WithWatchdogTimeout(t07Lease))
	}
	healthy := make([]t07Result, len(netKinds))
	faulted := make([]t07Result, len(netKinds))
	pttl := make([]t07Result, len(netKinds))
	// The healthy runs go first, one kind at a time, so that their latency
	// measures the library rather than a crowded CPU; the fault runs then
	// go at once: they spend their time waiting.
	for i, k := range netKinds {
		healthy[i] = t07Run(t, healthyEnvs[i], k, t07Healthy, n)
	}
	var wg sync.WaitGroup
	laneResults := make([][]t07Result, len(netKinds))
	for i, k := range netKinds {
		laneResults[i] = make([]t07Result, lanes)
		for l := range lanes {
			wg.Go(func() { laneResults[i][l] = t07Run(t, faultedEnvs[i][l], k, t07Faulted, nFaulted/lanes) })
		}
		wg.Go(func() { pttl[i] = t07Run(t, pttlEnvs[i], k, t07Dropped, nPTTL) })
	}
	wg.Wait()
	for i := range netKinds {
		faulted[i] = t07Merge(laneResults[i])
	}
	for i, k := range netKinds {
		for _, run := range []struct {
			what  string
			r     t07Result
			want  int
			bound time.Duration
		}{
			{t07Healthy, healthy[i], n, latencyBound(t07HealthyP99)},
			{t07Faulted, faulted[i], nFaulted, t07Lease + t07Slack},
			{t07Dropped, pttl[i], nPTTL, t07Lease + t07Slack},
		} {
			r := run.r
			p50, p99 := netPercentile(r.handoffs, 0.5), netPercentile(r.handoffs, 0.99)
			maxD := netPercentile(r.handoffs, 1)
			t.Logf("T07 %s %s: %d hand-offs in %v, p50 %v p99 %v max %v (p99 bound %v), %d hung waiters, longest Lock %v, %d subscriber resets; lock errors: %v; unlock errors: %v",
				k.name, run.what, len(r.handoffs), r.elapsed.Round(time.Millisecond), p50.Round(100*time.Microsecond),
				p99.Round(100*time.Microsecond), maxD.Round(100*time.Microsecond), run.bound, r.hung, r.longestWait.Round(time.Millisecond), r.resets, &r.lockErrs, &r.unlock)
			if len(r.handoffs) < run.want {
				t.Errorf("%s %s: %d hand-offs, want %d", k.name, run.what, len(r.handoffs), run.want)
			}
			if r.hung > 0 {
				t.Errorf("%s %s: %d waiters hung (waited %v or %v dropped)", k.name, run.what, r.hung, t07Hung, t07HungDropped)
			}
			if len(r.lockErrs.order) > 0 || len(r.unlock.order) > 0 {
				t.Errorf("%s %s: lock errors: %v; unlock errors: %v", k.name, run.what, &r.lockErrs, &r.unlock)
			}
			if p99 > run.bound {
				t.Errorf("%s %s: hand-off p99 %v above %v", k.name, run.what, p99, run.bound)
			}
		}
	}
}

// The runs of T7.
const (
	t07Healthy = "healthy" // no fault
	t07Faulted = "faulted" // messages dropped, subscriptions killed
	t07Dropped = "dropped" // messages dropped only: the PTTL fallback
)

// t07Run makes n hand-offs of kind k on e in the run what. It may run on
// a goroutine of its own and reports with t.Errorf.
func t07Run(t *testing.T, e *netEnv, k netKind, what string, n int) t07Result {
	name := fmt.Sprintf("t07:%s:%s", k.name, what)
	var (
		mu        sync.Mutex
		holders   int
		freeSince time.Time
		res       t07Result
		stop      atomic.Bool
	)
	hungAfter := t07Hung
	if what == t07Dropped {
		hungAfter = t07HungDropped
	}
	// The run ends when the n-th hand-off is seen: the Locks still
	// waiting then are cancelled (not hung).
	runCtx, endRun := context.WithCancel(context.Background())
	defer endRun()
	done := make(chan struct{})
	var faultsWG sync.WaitGroup
	if what != t07Healthy {
		e.proxy.DropPushes(true)
	}
	if what == t07Faulted {
		faultsWG.Go(func() {
			tick := time.NewTicker(t07ResetEvery)
			defer tick.Stop()
			for {
				select {
				case <-done:
					return
				case <-tick.C:
					n := e.proxy.ResetSubscribers()
					mu.Lock()
					res.resets += n
					mu.Unlock()
				}
			}
		})
	}
	start := time.Now()
	var wg sync.WaitGroup
	for g := range t07Waiters {
		kind := k
		if k.name == "rwread" && g%2 == 0 {
			kind = netKindNamed("rwwrite")
		}
		lk := kind.open(e.c, name)
		wg.Go(func() {
			owner := interlock.NewOwnerID()
			octx := interlock.WithOwner(context.Background(), owner)
			for !stop.Load() {
				ctx, cancel := context.WithTimeout(interlock.WithOwner(runCtx, owner), hungAfter)
				called := time.Now()
				err := lk.Lock(ctx)
				if err != nil {
					cancel()
					mu.Lock()
					switch {
					case errors.Is(err, context.DeadlineExceeded):
						res.hung++
					case errors.Is(err, context.Canceled) && stop.Load():
					default:
						res.lockErrs.add(err)
					}
					mu.Unlock()
					continue
				}
				now := time.Now()
				mu.Lock()
				res.longestWait = max(res.longestWait, now.Sub(called))
				if holders == 0 && !freeSince.IsZero() {
					res.handoffs = append(res.handoffs, now.Sub(freeSince))
					if len(res.handoffs) >= n {
						stop.Store(true)
						endRun()
					}
				}
				freeSince = time.Time{}
				holders++
				mu.Unlock()
				time.Sleep(time.Millisecond) // the critical section
				mu.Lock()
				if holders--; holders == 0 {
					freeSince = time.Now()
				}
				mu.Unlock()
				uctx, ucancel := context.WithTimeout(octx, 10*time.Second)
				if err := lk.Unlock(uctx); err != nil {
					mu.Lock()
					res.unlock.add(err)
					mu.Unlock()
				}
				ucancel()
				cancel()
			}
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	close(done)
	faultsWG.Wait()
	e.proxy.DropPushes(false)
	// Nothing may be left: every waiter ended holding, and released.
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := netKeysLeft(t, e.direct)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("%s %s: keys left:\n%s", k.name, what, netDump(e.direct, left))
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	return res
}

// netKindNamed returns the kind called name.
func netKindNamed(name string) netKind {
	for _, k := range netKinds {
		if k.name == name {
			return k
		}
	}
	panic("reliability: no lock kind " + name)
}

// t07Merge sums the results of lanes that ran at once.
func t07Merge(rs []t07Result) t07Result {
	var m t07Result
	for _, r := range rs {
		m.handoffs = append(m.handoffs, r.handoffs...)
		m.hung += r.hung
		m.longestWait = max(m.longestWait, r.longestWait)
		m.resets += r.resets
		m.elapsed = max(m.elapsed, r.elapsed)
		m.lockErrs.merge(&r.lockErrs)
		m.unlock.merge(&r.unlock)
	}
	return m
}
