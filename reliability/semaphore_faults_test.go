package reliability

// The semaphores under faults (docs/reliability.md, T27 to T29), for the
// plain semaphore (Redisson's RSemaphore) and the expirable one
// (RPermitExpirableSemaphore):
//
//   - T27: lost replies to acquire and release scripts, and a
//     cancellation storm, never count a permit twice nor leak one: once
//     the Client's background clean-up is done, the free permits plus the
//     ones the test holds are exactly the initial count.
//   - T28: a server restart, dropped messages and killed subscription
//     connections leave no waiter hung: every waiter parked in Acquire
//     returns within sfWakeLimit of the release that frees it.
//   - T29: a watchdog permit (lease 0) outlives three leases in a holder
//     process, and comes back within one lease of that process's SIGKILL.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/script"
	"github.com/interlock-go/interlock/semaphore"
)

const (
	// t27Permits is the initial count of T27's semaphores.
	t27Permits = 8
	// t27Watchdog is the watchdog timeout of T27's Clients: longer than
	// every settle, so that a leaked watchdog permit is not reclaimed by
	// its expiry before the check sees it.
	t27Watchdog = 10 * time.Second
	// t27Lease is the explicit lease of half of T27's expirable permits.
	t27Lease = 30 * time.Second
	// t27Settle bounds the background clean-up of a lost acquisition.
	t27Settle = 5 * time.Second
	// t27AllLost is how long an acquisition runs with every one of its
	// replies lost (the plain semaphore's are resent) before its context
	// ends it.
	t27AllLost = 100 * time.Millisecond
)

// t27LateWrite is how long, after an acquisition whose every reply was to
// be lost has returned, the rule stays armed until the proxy dropped one:
// rueidis writes a queued command even after its context ended, and in
// the PR gate, where three packages share two cores under the race
// detector, its writer can wake after the 100 ms. Without that wait the
// reply to such a late write would come back, and the iteration would
// count as a fault that dropped nothing.
func t27LateWrite() time.Duration { return latencyBound(t27AllLost) }

// t27Tally is what one kind's run of lost replies saw.
type t27Tally struct {
	acqOK, acqFailed, acqBusy     int
	relOK, relFailed              int
	overCounts, leaks, notDropped int
	idsLeft, holdsLeft            int
	acqErrs, relErrs              netErrTally
	settleMax                     time.Duration
}

func TestT27SemaphoreLostReplies(t *testing.T) {
	iters := sized(90, 900)
	for _, k := range sfKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			t27Run(t, k, iters)
		})
	}
}

// t27Run loses, in every iteration, the reply to an acquisition (one
// reply, or every reply for t27AllLost), to the release that follows, or
// to both, and checks the count after each step.
func t27Run(t *testing.T, k sfKind, iters int) {
	e := netStart(t, interlock.WithWatchdogTimeout(t27Watchdog))
	viewClient, err := interlock.New(e.direct, interlock.WithWatchdogTimeout(t27Watchdog))
	require.NoError(t, err)
	t.Cleanup(func() { _ = viewClient.Close() })
	name := "t27:" + k.name
	sem, view := k.open(e.c, name), k.open(viewClient, name)
	ctx, cancel := context.WithTimeout(t.Context(), time.Duration(iters)*time.Second+time.Minute)
	defer cancel()
	ok, err := view.TrySet(ctx, t27Permits)
	require.NoError(t, err)
	require.True(t, ok)
	acqPred, relPred := netScripts(k.acquire...), netScripts(k.release...)

	var tl t27Tally
	holdsBefore := 0 // permits the Client still records though released
	// settle checks that the free count comes to want, and never above.
	settle := func(i int, step string, want int64) {
		s, err := sfSettle(e.c, view.Available, want, t27Settle)
		if err != nil {
			t.Errorf("iteration %d, %s: reading the count: %v", i, step, err)
			return
		}
		tl.settleMax = max(tl.settleMax, s.waited)
		switch {
		case s.over:
			tl.overCounts++
			t.Errorf("iteration %d, %s: %d permits free, want %d: counted twice", i, step, s.got, want)
		case s.got != want:
			tl.leaks++
			t.Errorf("iteration %d, %s: %d permits free after %v, want %d: leaked", i, step, s.got, t27Settle, want)
		}
	}
	start := time.Now()
	for i := range iters {
		n := 1 + i%2
		lease := time.Duration(0) // the expirable semaphore's watchdog
		if i%4 >= 2 {
			lease = t27Lease
		}
		acqMode := i % 3        // 0: no fault, 1: one reply lost, 2: every reply lost for t27AllLost
		relDrops := (i / 3) % 3 // replies of the release lost
		if acqMode == 0 && relDrops == 0 {
			relDrops = 1
		}

		// The acquisition.
		before := e.proxy.Stats().RepliesDropped
		actx, acancel := ctx, context.CancelFunc(func() {})
		switch acqMode {
		case 1:
			e.proxy.DropReplyTo(acqPred, 1)
		case 2:
			e.proxy.DropReplyTo(acqPred, -1)
			actx, acancel = context.WithTimeout(ctx, t27AllLost)
		}
		var (
			h  sfHeld
			ok bool
		)
		if i%5 == 4 { // the blocking call takes the same path
			h, err = sem.Acquire(actx, n, lease)
			ok = err == nil
		} else {
			h, ok, err = sem.TryAcquire(actx, n, lease)
		}
		acancel()
		if acqMode == 2 {
			netDropped(e.proxy, before, t27LateWrite())
		}
		e.proxy.DropReplyTo(nil, 0)
		if acqMode > 0 && e.proxy.Stats().RepliesDropped == before {
			tl.notDropped++
		}
		switch {
		case err != nil:
			tl.acqFailed++
			sfAddErr(&tl.acqErrs, err)
		case ok:
			tl.acqOK++
		default:
			tl.acqBusy++
			t.Errorf("iteration %d: TryAcquire(%d) found no free permit of %d", i, n, t27Permits)
		}
		settle(i, "after the acquisition", int64(t27Permits-h.n))
		if !ok {
			if h, ok, err = sem.TryAcquire(ctx, n, lease); err != nil || !ok {
				t.Fatalf("iteration %d: TryAcquire(%d) without a fault: %v, %v", i, n, ok, err)
			}
			settle(i, "after the acquisition without a fault", int64(t27Permits-n))
		}

		// The release.
		before = e.proxy.Stats().RepliesDropped
		if relDrops > 0 {
			e.proxy.DropReplyTo(relPred, relDrops)
		}
		err = sem.Release(ctx, h)
		e.proxy.DropReplyTo(nil, 0)
		if relDrops > 0 && e.proxy.Stats().RepliesDropped == before {
			tl.notDropped++
		}
		if err != nil {
			sfAddErr(&tl.relErrs, err)
			if tl.relFailed++; tl.relFailed <= 3 {
				t.Errorf("iteration %d: Release of %d permits, %d replies lost: %v", i, n, relDrops, err)
			}
		} else {
			tl.relOK++
		}
		settle(i, "after the release", t27Permits)
		if x, isExp := view.(sfExpirable); isExp {
			if left, err := x.e.Acquired(ctx); err != nil || left != 0 {
				tl.idsLeft++
				t.Errorf("iteration %d: %d permits still acquired after the release (%v)", i, left, err)
			}
		}
		if holds := e.c.Stats().Holds; holds > holdsBefore {
			tl.holdsLeft += holds - holdsBefore
			holdsBefore = holds
		}
		if tl.overCounts+tl.leaks+tl.idsLeft > 0 && i > 10 {
			break // the first failures say it all
		}
	}
	t.Logf("T27 %s: %d iterations in %v: acquisitions %d ok, %d failed (errors: %v), %d busy; releases %d ok, %d failed (errors: %v); %d counted twice, %d leaked, %d ids left, %d holds left, %d faults not dropped; slowest settle %v",
		k.name, iters, time.Since(start).Round(time.Millisecond), tl.acqOK, tl.acqFailed, &tl.acqErrs, tl.acqBusy,
		tl.relOK, tl.relFailed, &tl.relErrs, tl.overCounts, tl.leaks, tl.idsLeft, tl.holdsLeft, tl.notDropped,
		tl.settleMax.Round(time.Millisecond))
	assert.Zero(t, tl.notDropped, "faults in which the proxy dropped no reply")
	assert.Zero(t, tl.relFailed, "releases that failed after a lost reply: %v", &tl.relErrs)
	assert.Zero(t, tl.holdsLeft, "released permits the Client still records")
}

const (
	// t27StormPermits is the storm's semaphore's count.
	t27StormPermits = 4
	// t27StormWorkers is how many goroutines acquire at once.
	t27StormWorkers = 16
)

// TestT27SemaphoreCancellationStorm is T19 for the semaphores: many
// acquisitions of one contended semaphore, each with a context cancelled
// 0-5 ms after the call; the ones that get permits hold them briefly and
// release them. The permits held at once never exceed the count, and once
// the clean-up is done every permit is free again, no permit is recorded,
// and no channel is left.
func TestT27SemaphoreCancellationStorm(t *testing.T) {
	n := sized(3000, 30000)
	for _, k := range sfKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			rc := redistest.Standalone(t).Client(t)
			c, err := interlock.New(rc, interlock.WithWatchdogTimeout(t27Watchdog))
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			t27Storm(t, c, rc, k, n)
		})
	}
}

func t27Storm(t *testing.T, c *interlock.Client, rc rueidis.Client, k sfKind, n int) {
	name := "t27:storm:" + k.name
	sem := k.open(c, name)
	ok, err := sem.TrySet(t.Context(), t27StormPermits)
	require.NoError(t, err)
	require.True(t, ok)
	var (
		next, cancelled, acquired atomic.Int64
		gauge, peak               atomic.Int64 // permits held by the workers, by what their calls returned
		failures                  sync.Map
	)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range t27StormWorkers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(rand.Uint64(), uint64(w)))
			for next.Add(1) <= int64(n) {
				p := 1 + rng.IntN(2)
				lease := time.Duration(0)
				if rng.IntN(2) == 0 {
					lease = semaphore.NoExpiry // a leak of it would never expire
				}
				ctx, cancel := context.WithCancel(context.Background())
				stop := time.AfterFunc(time.Duration(rng.Int64N(int64(t19MaxCancel)+1)), cancel)
				h, err := sem.Acquire(ctx, p, lease)
				stop.Stop()
				cancel()
				switch {
				case err == nil:
					acquired.Add(1)
					g := gauge.Add(int64(p))
					for {
						m := peak.Load()
						if g <= m || peak.CompareAndSwap(m, g) {
							break
						}
					}
					if d := rng.IntN(3); d > 0 {
						time.Sleep(time.Duration(d) * time.Millisecond)
					}
					gauge.Add(-int64(p))
					rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
					if err := sem.Release(rctx, h); err != nil {
						t19Count(&failures, "release: "+err.Error())
					}
					rcancel()
				case errors.Is(err, context.Canceled):
					cancelled.Add(1)
				default:
					t19Count(&failures, "acquire: "+err.Error())
				}
			}
		})
	}
	wg.Wait()
	storm := time.Since(start)
	s, err := sfSettle(c, sem.Available, t27StormPermits, t27Settle)
	require.NoError(t, err)
	var left int64
	if x, isExp := sem.(sfExpirable); isExp {
		left, err = x.e.Acquired(t.Context())
		require.NoError(t, err)
	}
	st := c.Stats()
	channels := t19ServerChannels(t, rc)
	t.Logf("T27 storm %s: %d acquisitions in %v, %d cancelled, %d acquired, peak %d of %d permits held; after %v: %d free, %d acquired, %d holds, %d undo steps, %d hub channels, %d server channels",
		k.name, n, storm.Round(time.Millisecond), cancelled.Load(), acquired.Load(), peak.Load(), t27StormPermits,
		s.waited.Round(time.Millisecond), s.got, left, st.Holds, st.UndoQueue, st.Channels, channels)
	failures.Range(func(msg, count any) bool {
		t.Errorf("%s: %d calls failed with: %s", k.name, count.(*atomic.Int64).Load(), msg)
		return true
	})
	assert.Equal(t, int64(n), cancelled.Load()+acquired.Load(), "every acquisition either failed with ctx's error or succeeded")
	assert.LessOrEqual(t, peak.Load(), int64(t27StormPermits), "permits held at once")
	assert.False(t, s.over, "free permits above the count: counted twice")
	assert.Equal(t, int64(t27StormPermits), s.got, "free permits after the storm")
	assert.Zero(t, left, "permits still acquired after the storm: %s", t27Leased(rc, keys.Suffix(name, "timeout")))
	assert.Zero(t, st.Holds, "permits still recorded by the Client")
	assert.Zero(t, st.UndoQueue, "clean-up steps pending")
	assert.Zero(t, channels, "server-side channels left")
	require.Eventually(t, func() bool { return c.Stats().Channels == 0 }, 5*time.Second, 10*time.Millisecond, "hub channels left")
}

// TestT28SemaphoreWaiters parks waiters in Acquire on a semaphore whose
// permits another Client holds, breaks something (sfFaults), and releases
// the permits: every waiter must return within sfWakeLimit.
func TestT28SemaphoreWaiters(t *testing.T) {
	rounds, waiters := sized(1, 10), sized(4, 8)
	for _, k := range sfKinds {
		for _, f := range sfFaults {
			t.Run(k.name+"/"+string(f), func(t *testing.T) {
				t.Parallel()
				t28Run(t, k, f, rounds, waiters)
			})
		}
	}
}

func t28Run(t *testing.T, k sfKind, f sfFault, rounds, waiters int) {
	e := sfStart(t, f)
	name := fmt.Sprintf("t28:%s:%s", k.name, f)
	holder, sem := k.open(e.waker, name), k.open(e.c, name)
	ctx, cancel := context.WithTimeout(t.Context(), time.Duration(rounds)*(sfHung+time.Minute))
	defer cancel()
	ok, err := holder.TrySet(ctx, waiters)
	require.NoError(t, err)
	require.True(t, ok)
	var (
		all         []time.Duration
		errs        netErrTally
		killed      int64
		pushes      int64
		restartTook []time.Duration
	)
	for r := range rounds {
		// Every permit held by the waker, without expiry: only a message,
		// a reconnection or the repoll can wake a waiter.
		var held sfHeld
		require.NoError(t, sfRetryConn(func() (err error) {
			held, err = holder.Acquire(ctx, waiters, semaphore.NoExpiry)
			return err
		}), "round %d: the holder's acquisition", r)
		got := make([]sfHeld, waiters)
		res := sfRound(t, e, f, sem.Channel(), waiters,
			func(ctx context.Context, i int) error {
				h, err := sem.Acquire(ctx, 1, semaphore.NoExpiry)
				got[i] = h
				return err
			},
			func(ctx context.Context) error {
				// Still all taken (the restarted server reloaded them).
				if n, err := holder.Available(ctx); err != nil || n != 0 {
					t.Errorf("round %d: %d permits free before the release (%v)", r, n, err)
				}
				return holder.Release(ctx, held)
			})
		sfCheckRound(t, k.name, f, waiters, res)
		all = append(all, res.delays...)
		errs.merge(&res.errs)
		killed += res.killed
		pushes += res.pushes
		if f == sfRestart {
			restartTook = append(restartTook, res.took)
		}
		// The waiters hold every permit; they give them back.
		if n, err := holder.Available(ctx); err != nil || n != 0 {
			t.Errorf("round %d: %d permits free with every waiter holding one (%v)", r, n, err)
		}
		for i, h := range got {
			if h.n > 0 {
				require.NoError(t, sem.Release(ctx, h), "round %d: waiter %d's release", r, i)
			}
		}
		s, err := sfSettle(e.c, holder.Available, int64(waiters), t27Settle)
		require.NoError(t, err)
		if s.over || s.got != int64(waiters) {
			t.Errorf("round %d: %d permits free after the waiters' releases, want %d", r, s.got, waiters)
		}
		if t.Failed() {
			break
		}
	}
	t.Logf("T28 %s %s: %d rounds × %d waiters, wake-up after the release %s (bound %v); failed calls retried: %v; subscription connections killed %d; messages dropped %d; restarts took %s",
		k.name, f, rounds, waiters, sfDurations(all), sfWakeLimit(), &errs, killed, pushes, procDurations(restartTook))
}

// The permit-holder worker of T29: on "acquire" it takes one watchdog
// permit (lease 0) of the expirable semaphore cfg.Name, and says
// "acquired" {t29Acquired}; on "status" it says "status" {t29Status}.

// t29Config is the permit-holder worker's configuration.
type t29Config struct {
	Addr     string        `json:"addr"`
	Watchdog time.Duration `json:"watchdog"`
	Name     string        `json:"name"`
}

// t29Acquired is the payload of "acquired".
type t29Acquired struct {
	ID string `json:"id"`
	T  int64  `json:"t"` // monoNow when Acquire returned
}

// t29Status is the payload of "status".
type t29Status struct {
	Guard     string        `json:"guard"` // the guard's cause, "" while it lives
	Remaining time.Duration `json:"remaining"`
}

var _ = register("permit-holder", t29HolderWorker)

func t29HolderWorker() error {
	var cfg t29Config
	if err := workerConfig(&cfg); err != nil {
		return err
	}
	rc, c, err := dialLocks(lockConfig{Addr: cfg.Addr, Watchdog: cfg.Watchdog})
	if err != nil {
		return err
	}
	defer rc.Close()
	defer c.Close()
	e := semaphore.NewExpirable(c, cfg.Name)
	var (
		id    semaphore.PermitID
		guard context.Context
	)
	cmds := workerCommands()
	workerSay("ready", nil)
	for m := range cmds {
		switch m.Verb {
		case "acquire":
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			ids, err := e.Acquire(ctx, 1, 0)
			cancel()
			if err != nil {
				return fmt.Errorf("acquire: %w", err)
			}
			id = ids[0]
			guard = e.Guard(context.Background(), id)
			workerSay("acquired", t29Acquired{ID: id.String(), T: monoNow()})
		case "status":
			st := t29Status{Remaining: e.Remaining(id)}
			if guard == nil {
				st.Guard = "no permit"
			} else if guard.Err() != nil {
				st.Guard = context.Cause(guard).Error()
			}
			workerSay("status", st)
		default:
			return fmt.Errorf("unknown command %q", m.Verb)
		}
	}
	return nil
}

const (
	// t29Lease is the watchdog timeout of T29's holder and waiter.
	t29Lease = 900 * time.Millisecond
	// t29Tolerance is how much later than one lease after the kill the
	// waiter may get the permit (see t29Bound).
	t29Tolerance = 500 * time.Millisecond
)

// t29Bound is how soon after the kill the waiter must get the permit: the
// lease, when the permit is due, and t29Tolerance for the waiter to see
// it. How soon it sees it states no safety property (a waiter that got
// the permit while the holder held it fails at once, in every tier), and
// in the PR gate, where three packages share two cores under the race
// detector, the tolerance gets latencyBound's headroom; the nightly tier
// keeps lease + 500 ms.
func t29Bound() time.Duration { return t29Lease + latencyBound(t29Tolerance) }

// TestT29WatchdogPermit: a holder process takes the only permit of an
// expirable semaphore with lease 0 (the watchdog, timeout t29Lease) while
// a waiter of this process waits in Acquire. For three leases the permit
// stays taken (Available reads 0, the waiter waits), its score stays ahead
// of the clock and moves as the watchdog renews it, and the holder's Guard
// lives. Then the holder is killed with SIGKILL: the waiter must get the
// permit within t29Bound.
func TestT29WatchdogPermit(t *testing.T) {
	runs := sized(2, 20)
	srv := redistest.Standalone(t)
	rc := srv.Client(t)
	c, err := interlock.New(rc, interlock.WithWatchdogTimeout(t29Lease))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	var delays, dueAfterKill []time.Duration
	renewals := make([]int, 0, runs)
	for run := range runs {
		d, due, renewed := t29Run(t, srv, rc, c, fmt.Sprintf("t29:%d", run))
		if t.Failed() {
			return
		}
		delays, dueAfterKill, renewals = append(delays, d), append(dueAfterKill, due), append(renewals, renewed)
	}
	t.Logf("T29: %d runs, lease %v, held 3 leases each (distinct scores seen per hold: %v); permit due after the kill %s; waiter acquired after the kill %s (bound %v)",
		runs, t29Lease, renewals, procDurations(dueAfterKill), procDurations(delays), t29Bound())
}

// t29Run is one hold, watch and kill; it returns the waiter's delay after
// the kill, how far past the kill the permit's score was, and how many
// distinct scores the watch saw.
func t29Run(t *testing.T, srv *redistest.Server, rc rueidis.Client, c *interlock.Client, name string) (time.Duration, time.Duration, int) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	e := semaphore.NewExpirable(c, name)
	ok, err := e.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	require.True(t, ok)
	holder := startWorker(t, "permit-holder", t29Config{Addr: srv.Addr(), Watchdog: t29Lease, Name: name})
	_, err = holder.Expect(ctx, "ready")
	require.NoError(t, err)
	require.NoError(t, holder.Send("acquire"))
	var acq t29Acquired
	require.NoError(t, holder.ExpectJSON(ctx, "acquired", &acq))
	id, err := semaphore.ParsePermitID(acq.ID)
	require.NoError(t, err)
	raw := string(id[:])
	timeout := keys.Suffix(name, "timeout")
	score := func() (int64, bool) {
		s, err := rc.Do(ctx, rc.B().Zscore().Key(timeout).Member(raw).Build()).AsFloat64()
		if rueidis.IsRedisNil(err) {
			return 0, false
		}
		require.NoError(t, err)
		return int64(s), true
	}

	type got struct {
		ids []semaphore.PermitID
		err error
		t   int64
	}
	waiter := make(chan got, 1)
	go func() {
		ids, err := e.Acquire(ctx, 1, 0)
		waiter <- got{ids, err, monoNow()}
	}()

	// Three leases: taken, ahead of the clock, renewed.
	scores := map[int64]bool{}
	until := time.Now().Add(3 * t29Lease)
	for time.Now().Before(until) {
		n, err := e.Available(ctx)
		require.NoError(t, err)
		if n != 0 {
			t.Fatalf("%s: %d permits free %v into the hold", name, n, time.Since(until.Add(-3*t29Lease)).Round(time.Millisecond))
		}
		s, ok := score()
		now := time.Now().UnixMilli()
		if !ok || s <= now {
			t.Fatalf("%s: the permit's score %d (present %v) is not ahead of now %d", name, s, ok, now)
		}
		scores[s] = true
		select {
		case g := <-waiter:
			t.Fatalf("%s: the waiter got a permit while the holder held it: %v, %v", name, g.ids, g.err)
		default:
		}
		time.Sleep(30 * time.Millisecond)
	}
	require.NoError(t, holder.Send("status"))
	var st t29Status
	require.NoError(t, holder.ExpectJSON(ctx, "status", &st))
	require.Empty(t, st.Guard, "%s: the holder's guard ended after 3 leases", name)
	require.Positive(t, st.Remaining, "%s: the holder's Remaining after 3 leases", name)
	// A hold of three leases renewed every lease/3 moves the score about
	// nine times; three is the least that proves renewal.
	require.GreaterOrEqual(t, len(scores), 3, "%s: distinct scores seen over 3 leases", name)

	last, ok := score()
	require.True(t, ok)
	killedAt, killedWall := monoNow(), time.Now().UnixMilli()
	require.NoError(t, holder.Kill())
	require.Error(t, holder.Wait(ctx), "the holder exited normally after SIGKILL")
	due := time.Duration(last-killedWall) * time.Millisecond
	var g got
	select {
	case g = <-waiter:
	case <-time.After(t29Lease + 10*time.Second):
		t.Fatalf("%s: the waiter did not get the permit within %v of the kill", name, t29Lease+10*time.Second)
	}
	require.NoError(t, g.err)
	delay := time.Duration(g.t - killedAt)
	assert.LessOrEqual(t, due, t29Lease, "%s: the permit was due more than a lease after the kill", name)
	assert.LessOrEqual(t, delay, t29Bound(), "%s: the waiter got the permit %v after the kill", name, delay)
	require.NoError(t, e.Release(ctx, g.ids...))
	n, err := e.Available(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), n, "%s: free permits at the end", name)
	return delay, due, len(scores)
}

// t27Leased describes the acquired permits in the zset key: id, and how
// far its score is from now ("never" for a permit without expiry).
func t27Leased(rc rueidis.Client, key string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	zs, err := rc.Do(ctx, rc.B().Zrange().Key(key).Min("0").Max("-1").Withscores().Build()).AsZScores()
	if err != nil {
		return err.Error()
	}
	now := time.Now().UnixMilli()
	out := make([]string, 0, len(zs))
	for _, z := range zs {
		at := fmt.Sprintf("due in %v", time.Duration(int64(z.Score)-now)*time.Millisecond)
		if fmt.Sprintf("%.0f", z.Score) == script.NeverExpires {
			at = "never due"
		}
		out = append(out, fmt.Sprintf("%x (%s)", z.Member, at))
	}
	return fmt.Sprint(out)
}
