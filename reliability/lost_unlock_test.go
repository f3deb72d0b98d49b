package reliability

// T6 (docs/reliability.md, hazard H4): the reply to an unlock script is
// lost, at reentrancy depth 2. The proxy lets the script run and drops its
// reply; the library resends the same request under the same latch key,
// so the server applies it once and answers the first outcome again. For
// every kind: the count goes 2 -> 1 -> 0 and never skips (0 double
// decrements), each logical Unlock reports success exactly once, and a
// third Unlock, its reply lost as well, is refused as not held.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/runtime"
)

func TestT06LostUnlockReply(t *testing.T) {
	iters := sized(200, 1000)
	for _, k := range netKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			t06Run(t, k, iters)
		})
	}
}

// t06Lanes is how many Clients, each behind a proxy of its own, run a
// kind's iterations at once: every lost reply costs a resend pause, and
// lanes keep the test short without sharing a drop rule.
const t06Lanes = 5

// t06Tally is what one lane saw.
type t06Tally struct {
	successes, failures, doubleDecrements, wrongCounts int
	extraSuccesses, orphans, notDropped                int
	errs                                               netErrTally
}

func t06Run(t *testing.T, k netKind, iters int) {
	redistest.RequireProcess(t)
	srv := redistest.Standalone(t)
	direct := srv.Client(t)
	envs := make([]*netEnv, t06Lanes)
	for i := range envs {
		envs[i] = netAttach(t, srv, direct, interlock.WithWatchdogTimeout(2*time.Second))
	}
	tallies := make([]t06Tally, t06Lanes)
	start := time.Now()
	var wg sync.WaitGroup
	for lane, e := range envs {
		wg.Go(func() {
			for i := lane; i < iters; i += t06Lanes {
				if !t06Iteration(t, e, k, i, &tallies[lane]) || (t.Failed() && i > 10) {
					return
				}
			}
		})
	}
	wg.Wait()
	var sum t06Tally
	for _, tl := range tallies {
		sum.successes += tl.successes
		sum.failures += tl.failures
		sum.doubleDecrements += tl.doubleDecrements
		sum.wrongCounts += tl.wrongCounts
		sum.extraSuccesses += tl.extraSuccesses
		sum.orphans += tl.orphans
		sum.notDropped += tl.notDropped
		for _, m := range tl.errs.order {
			for range tl.errs.n[m] {
				sum.errs.add(errors.New(m))
			}
		}
	}
	t.Logf("T06 %s: %d lost unlock replies at depth 2 (and one more on a third Unlock) in %v: %d Unlocks succeeded, %d failed, %d double decrements, %d wrong counts, %d extra successes, %d orphans, %d not dropped; errors: %v",
		k.name, 2*iters, time.Since(start).Round(time.Millisecond), sum.successes, sum.failures, sum.doubleDecrements,
		sum.wrongCounts, sum.extraSuccesses, sum.orphans, sum.notDropped, &sum.errs)
	if sum.notDropped > 0 {
		t.Errorf("%d unlocks whose reply the proxy did not drop", sum.notDropped)
	}
}

// t06Iteration takes two holds of a fresh name and releases them with
// the unlock replies dropped. It runs on a lane's goroutine, so it reports
// with t.Errorf and returns false when it cannot go on.
func t06Iteration(t *testing.T, e *netEnv, k netKind, i int, tl *t06Tally) bool {
	name := fmt.Sprintf("t06:%s:%d", k.name, i)
	lk := k.open(e.c, name)
	octx := interlock.WithOwner(context.Background(), interlock.NewOwnerID())
	owner, err := e.c.Owner(octx)
	if err != nil {
		t.Errorf("iteration %d: owner: %v", i, err)
		return false
	}
	field := owner + k.suffix
	ctx, cancel := context.WithTimeout(octx, 20*time.Second)
	defer cancel()
	for n := range 2 {
		if err := lk.Lock(ctx); err != nil {
			t.Errorf("iteration %d: hold %d: %v", i, n+1, err)
			return false
		}
	}
	if got := netCount(t, e.direct, name, field); got != 2 {
		t.Errorf("iteration %d: count %d before unlocking, want 2", i, got)
		return false
	}
	for want := int64(1); want >= 0; want-- {
		dropped := e.proxy.Stats().RepliesDropped
		e.proxy.DropReplyTo(netScripts(k.unlock), 1)
		err := lk.Unlock(ctx)
		e.proxy.DropReplyTo(nil, 0)
		if e.proxy.Stats().RepliesDropped == dropped {
			tl.notDropped++
		}
		if err == nil {
			tl.successes++
		} else {
			tl.failures++
			tl.errs.add(err)
			t.Errorf("iteration %d: Unlock to %d: %v", i, want, err)
		}
		switch got := netCount(t, e.direct, name, field); {
		case got < want:
			tl.doubleDecrements++
			t.Errorf("iteration %d: count %d after an Unlock from %d (double decrement)", i, got, want+1)
		case got > want:
			tl.wrongCounts++
			t.Errorf("iteration %d: count %d after an Unlock from %d, want %d", i, got, want+1, want)
		}
	}
	// A third Unlock, its reply lost too, must still say "not held":
	// the latch must remember that outcome, not a success (hazard H4).
	dropped := e.proxy.Stats().RepliesDropped
	e.proxy.DropReplyTo(netScripts(k.unlock), 1)
	err = lk.Unlock(ctx)
	e.proxy.DropReplyTo(nil, 0)
	if e.proxy.Stats().RepliesDropped == dropped {
		tl.notDropped++
	}
	if !errors.Is(err, k.notHeld) {
		tl.extraSuccesses++
		t.Errorf("iteration %d: a third Unlock, its reply lost, returned %v, want %v", i, err, k.notHeld)
	}
	if left := t06KeysOf(t, e, name); len(left) > 0 {
		tl.orphans++
		t.Errorf("iteration %d: keys left after the unlocks:\n%s", i, netDump(e.direct, left))
	}
	// Guard's ok is exactly "an entry exists", even one whose leases ran out.
	if _, ok := runtime.Of(e.c).Renewal.Guard(context.Background(), name, field); ok {
		t.Errorf("iteration %d: a renewal entry is left after the unlocks", i)
	}
	return true
}

// t06KeysOf lists the keys left on the server that belong to lock name
// (the lanes share the server).
func t06KeysOf(t *testing.T, e *netEnv, name string) []string {
	var out []string
	for _, key := range netKeysLeft(t, e.direct) {
		if key == name || strings.Contains(key, "{"+name+"}") {
			out = append(out, key)
		}
	}
	return out
}

// TestT06UnlockOutlastsAnOutage loses the reply to an unlock script and
// then refuses the client's new connections for a while, as a partition
// does while it heals: every resend in that time fails on its connection.
// The Unlock must keep resending while its context lives, and succeed
// once, when the proxy takes connections again.
func TestT06UnlockOutlastsAnOutage(t *testing.T) {
	const outage = 600 * time.Millisecond
	for _, k := range netKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			redistest.RequireProcess(t)
			e := netStart(t)
			name := "t06:outage:" + k.name
			lk := k.open(e.c, name)
			ctx, cancel := context.WithTimeout(interlock.WithOwner(t.Context(), interlock.NewOwnerID()), 10*time.Second)
			defer cancel()
			require.NoError(t, lk.Lock(ctx))

			e.proxy.Refuse(true)
			e.proxy.DropReplyTo(netScripts(k.unlock), 1)
			dropped := e.proxy.Stats().RepliesDropped
			done := make(chan error, 1)
			go func() { done <- lk.Unlock(ctx) }()
			require.Eventually(t, func() bool { return e.proxy.Stats().RepliesDropped > dropped },
				5*time.Second, 5*time.Millisecond, "the unlock reply was not dropped")
			time.Sleep(outage)
			e.proxy.Refuse(false)
			require.NoError(t, <-done, "an Unlock gave up during the outage")
			assert.Empty(t, t06KeysOf(t, e, name), "keys left after the Unlock")
			assert.ErrorIs(t, lk.Unlock(ctx), k.notHeld)
		})
	}
}
