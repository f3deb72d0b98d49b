package reliability

// T4 (docs/reliability.md): a partition between one client process and
// Redis. Two worker processes run the oracle workload on the same names:
// one reaches Redis through a fault proxy, the other directly. The proxy
// blackholes the first for 0.5, 1 and 3 leases in turn (t04Runs times
// each), with a lease of recovery between partitions. Holders check their
// guard and remaining validity before every step (ctx-respecting), so:
//
//   - the oracle sees no overlap and no lost update;
//   - every Unlock, after the heal, returns nil or an error wrapping the
//     kind's ErrNotHeld (its hold was lost), never anything else;
//   - two leases after the workers stopped, no lock key is left.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/faultproxy"
	"github.com/interlock-go/interlock/internal/redistest"
)

// t04Lease is the workers' watchdog lease.
const t04Lease = time.Second

func TestT04Partition(t *testing.T) {
	t.Parallel() // mostly waiting for partitions to end: overlaps the other waiting tests
	// Runs per partition length and kind: §6.3 asks 100. The kinds, and in
	// the nightly tier several lanes per kind (each its own servers, proxy
	// and pair of processes), run at once: the workers spend most of the
	// time waiting for a partition to end.
	runs, lanes := sized(3, 100), sized(1, 4)
	var wg sync.WaitGroup
	for _, kind := range allKinds {
		for range lanes {
			wg.Go(func() { t04Kind(t, kind, (runs+lanes-1)/lanes) })
		}
	}
	wg.Wait()
}

// t04Kind runs every partition length on kind. It runs on a goroutine of
// its own: it reports with t.Errorf and returns on a setup failure.
func t04Kind(t *testing.T, kind lockKind, runs int) {
	srv, err := redistest.Start()
	if err != nil {
		t.Errorf("%s: %v", kind, err)
		return
	}
	defer srv.Stop()
	oracleSrv, err := redistest.Start()
	if err != nil {
		t.Errorf("%s: oracle: %v", kind, err)
		return
	}
	defer oracleSrv.Stop()
	proxy, err := faultproxy.Start(srv.Addr())
	if err != nil {
		t.Errorf("%s: %v", kind, err)
		return
	}
	defer func() { _ = proxy.Close() }()

	w := workload{
		Lock:       lockConfig{Kind: kind, Watchdog: t04Lease, FairWait: 2 * time.Second},
		OracleAddr: oracleSrv.Addr(),
		Fence:      kind.hasToken(),
		Names:      names("t04-"+string(kind), 2),
		Goroutines: 2,
		Steps:      10,
		JitterMin:  5 * time.Millisecond,
		JitterMax:  30 * time.Millisecond,
		// A Lock waits out the longest partition and then some.
		AcquireTimeout: 10 * time.Second,
	}
	partitioned, straight := w, w
	partitioned.Lock.Addr = proxy.Addr()
	straight.Lock.Addr = srv.Addr()
	procs := []*workerProc{}
	for _, cfg := range []workload{partitioned, straight} {
		p, err := spawnWorker(t, "netpartition", cfg)
		if err != nil {
			t.Errorf("%s: %v", kind, err)
			return
		}
		defer p.cleanup()
		procs = append(procs, p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for _, p := range procs {
		if _, err := p.Expect(ctx, "ready"); err != nil {
			t.Errorf("%s: %v", kind, err)
			return
		}
	}
	for _, p := range procs {
		if err := p.Send("go"); err != nil {
			t.Errorf("%s: %v", kind, err)
			return
		}
	}
	rnd := rand.New(rand.NewPCG(uint64(len(kind)), 4))
	start := time.Now()
	for _, leases := range []float64{0.5, 1, 3} {
		length := time.Duration(leases * float64(t04Lease))
		for range runs {
			netWait(ctx, time.Duration(200+rnd.IntN(300))*time.Millisecond)
			proxy.Blackhole(true)
			netWait(ctx, length)
			proxy.Blackhole(false)
			netWait(ctx, t04Lease)
		}
	}
	partitions := time.Since(start)
	var results [2]netPartResult
	for i, p := range procs {
		if err := p.Send("stop"); err != nil {
			t.Errorf("%s: %v", kind, err)
			return
		}
		if err := p.ExpectJSON(ctx, "result", &results[i]); err != nil {
			t.Errorf("%s: %v", kind, err)
			return
		}
		if err := p.Wait(ctx); err != nil {
			t.Errorf("%s: worker %v: %v", kind, p, err)
		}
	}
	// Both workers are gone, and with them every renewal.
	netWait(ctx, 2*t04Lease)
	direct, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, ForceSingleClient: true})
	if err != nil {
		t.Errorf("%s: %v", kind, err)
		return
	}
	defer direct.Close()
	orphans := netKeysLeft(t, direct)
	orc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{oracleSrv.Addr()}, ForceSingleClient: true})
	if err != nil {
		t.Errorf("%s: oracle: %v", kind, err)
		return
	}
	defer orc.Close()
	v, err := (&Oracle{srv: oracleSrv, rc: orc}).Verdict(ctx)
	if err != nil {
		t.Errorf("%s: oracle: %v", kind, err)
		return
	}
	var writes int64
	for _, r := range results {
		writes += r.Writes
	}
	if n := v.Violations(); n != 0 {
		t.Errorf("%s: oracle: %d violations: %v", kind, n, v)
		for _, ov := range v.Check.Overlaps {
			t.Errorf("%s: oracle: %v", kind, ov)
		}
	}
	if v.Stats.Writes != writes {
		t.Errorf("%s: oracle: %d writes accepted, workers completed %d", kind, v.Stats.Writes, writes)
	}
	for i, r := range results {
		side := [2]string{"partitioned", "direct"}[i]
		t.Logf("T04 %s %s: %d cycles, %d writes, %d steps skipped (guard or validity), %d acquire errors, unlocks: %d ok, %d not held, %d other; samples %q",
			kind, side, r.Cycles, r.Writes, r.Skipped, r.AcquireErrs, r.UnlockOK, r.UnlockNotHeld, r.UnlockOther, r.Samples)
		if r.UnlockOther > 0 {
			t.Errorf("%s %s: %d Unlocks returned neither nil nor the kind's ErrNotHeld", kind, side, r.UnlockOther)
		}
	}
	t.Logf("T04 %s: %d partitions each of 0.5, 1 and 3 leases (lease %v) in %v; oracle: %v; %d orphan keys 2 leases after the workers stopped",
		kind, runs, t04Lease, partitions.Round(time.Millisecond), v, len(orphans))
	if len(orphans) > 0 {
		t.Errorf("%s: keys left 2 leases after the workers stopped:\n%s", kind, netDump(direct, orphans))
	}
	if results[0].Cycles == 0 || results[1].Cycles == 0 {
		t.Errorf("%s: a worker made no acquisition: %+v", kind, results)
	}
}

// netPartResult is what a "netpartition" worker did.
type netPartResult struct {
	Cycles        int64    `json:"cycles"`
	Writes        int64    `json:"writes"`
	Skipped       int64    `json:"skipped"`
	AcquireErrs   int64    `json:"acquire_errs"`
	UnlockOK      int64    `json:"unlock_ok"`
	UnlockNotHeld int64    `json:"unlock_not_held"`
	UnlockOther   int64    `json:"unlock_other"`
	Samples       []string `json:"samples"`
}

// netPartWorker is the worker "netpartition": a workload (its
// configuration) run until the parent sends "stop", that classifies every
// Unlock: nil, the kind's ErrNotHeld, or anything else. It prints "ready",
// waits for "go", and at the end prints "result" with a netPartResult.
func netPartWorker() error {
	var w workload
	if err := workerConfig(&w); err != nil {
		return err
	}
	w = w.withDefaults()
	notHeld := map[lockKind]error{
		kindRLock: netKindNamed("rlock").notHeld, kindFair: netKindNamed("fairlock").notHeld,
		kindWrite: netKindNamed("rwwrite").notHeld, kindFenced: netKindNamed("fenced").notHeld,
	}[w.Lock.Kind]
	if notHeld == nil {
		return fmt.Errorf("unknown lock kind %q", w.Lock.Kind)
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
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var (
		res    netPartResult
		mu     sync.Mutex
		cycles atomic.Int64
		writes atomic.Int64
		wg     sync.WaitGroup
		budget = w.stepBudget()
	)
	sample := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		if len(res.Samples) < 10 {
			res.Samples = append(res.Samples, s)
		}
	}
	counter := func(p *int64) {
		mu.Lock()
		defer mu.Unlock()
		*p++
	}
	for g := range w.Goroutines {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(g)))
			octx := interlock.WithOwner(context.Background(), interlock.NewOwnerID())
			lockers := map[string]locker{}
			for ctx.Err() == nil {
				name := w.Names[rnd.IntN(len(w.Names))]
				lk := lockers[name]
				if lk == nil {
					lk, _ = newLocker(c, w.Lock, name)
					lockers[name] = lk
				}
				actx, cancel := context.WithTimeout(interlock.WithOwner(ctx, mustOwnerID(octx)), w.AcquireTimeout)
				h, err := acquireHold(actx, c, lk, name, w.Lock.lease())
				cancel()
				if err != nil {
					if ctx.Err() == nil {
						counter(&res.AcquireErrs)
					}
					continue
				}
				cycles.Add(1)
				sec := newSection(h, name)
				entered := false
				for range w.Steps {
					if ok, _ := h.Valid(budget); !ok {
						counter(&res.Skipped)
						break
					}
					if !entered {
						if ok, err := o.Enter(octx, sec); err != nil || !ok {
							sample(fmt.Sprintf("enter: %v %v", ok, err))
							break
						}
						entered = true
					}
					ok, err := o.RMW(octx, sec, w.jitter(rnd))
					if err != nil || !ok {
						sample(fmt.Sprintf("write: %v %v", ok, err))
						break
					}
					writes.Add(1)
				}
				if entered {
					if err := o.Exit(octx, sec); err != nil {
						sample("exit: " + err.Error())
					}
				}
				uctx, ucancel := context.WithTimeout(octx, 10*time.Second)
				err = h.Unlock(uctx)
				ucancel()
				switch {
				case err == nil:
					counter(&res.UnlockOK)
				case errors.Is(err, notHeld):
					counter(&res.UnlockNotHeld)
				default:
					counter(&res.UnlockOther)
					sample("unlock: " + err.Error())
				}
			}
		})
	}
	m, err := awaitCommand(cmds, 10*time.Minute)
	stop()
	wg.Wait()
	if err != nil || m.Verb != "stop" {
		return fmt.Errorf("waiting for stop: %v %v", m, err)
	}
	res.Cycles, res.Writes = cycles.Load(), writes.Load()
	workerSay("result", res)
	return nil
}

var _ = register("netpartition", netPartWorker)
