package reliability

// T5 (docs/reliability.md, hazard H3): the reply to an acquire script is
// lost. The proxy forwards the script, lets it run, drops its reply and
// ends the connection, the only way a single reply can vanish from a TCP
// stream. internal/lockcore (Attempt) promises that the acquisition is
// then taken back (undo, on a fresh context, for exactly the hold count
// the lost acquisition would have made) before Lock returns the error, and
// that no renewal is armed for it. So, for every kind and half the time on
// a re-entry:
//
//   - a Lock that fails leaves the owner's count where it was, and no key
//     at all when the owner held nothing, and no new renewal entry;
//   - a Lock that succeeds (none should, the reply being lost) made the
//     count exactly one higher, never two;
//   - after the owner's unlocks no key is left.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
)

func TestT05LostAcquireReply(t *testing.T) {
	iters := sized(200, 1000)
	for _, k := range netKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			t05Run(t, k, iters)
		})
	}
}

func t05Run(t *testing.T, k netKind, iters int) {
	e := netStart(t, interlock.WithWatchdogTimeout(2*time.Second))
	pred := netScripts(k.acquire...)
	var (
		failed, succeeded int
		wrongCounts       int // a count other than expected after a Lock
		orphans           int // keys left after a failed first acquisition or the unlocks
		renewalsLeft      int // renewal entries a failed Lock added
		notDropped        int // iterations where the proxy dropped nothing
		errs              netErrTally
	)
	start := time.Now()
	for i := range iters {
		name := fmt.Sprintf("t05:%s:%d", k.name, i)
		lk := k.open(e.c, name)
		octx, field := netOwner(t, e.c, k)
		depth := int64(i % 2) // holds taken before the lost one
		ctx, cancel := context.WithTimeout(octx, 20*time.Second)
		for range depth {
			require.NoError(t, lk.Lock(ctx), "iteration %d: acquisition before the lost one", i)
		}
		dropped := e.proxy.Stats().RepliesDropped
		e.proxy.DropReplyTo(pred, 1)
		err := lk.Lock(ctx)
		e.proxy.DropReplyTo(nil, 0)
		if e.proxy.Stats().RepliesDropped == dropped {
			notDropped++
		}
		got := netCount(t, e.direct, name, field)
		want := depth
		if err == nil {
			succeeded++
			want = depth + 1
		} else {
			// A take-back whose first try failed (the connection was still
			// being redialed) goes on in the background after Lock returned.
			got = netTakenBack(t, e.direct, name, field, got, want)
			failed++
			errs.add(err)
			if n := e.c.Stats().Holds; int64(n) != depth {
				renewalsLeft++
				t.Errorf("iteration %d (depth %d): %d renewal entries after a failed Lock, want %d", i, depth, n, depth)
			}
			if depth == 0 {
				if left := netKeysLeft(t, e.direct); len(left) > 0 {
					orphans++
					t.Errorf("iteration %d: keys left by a failed first acquisition:\n%s", i, netDump(e.direct, left))
				}
			}
		}
		if got != want {
			wrongCounts++
			t.Errorf("iteration %d (depth %d, Lock err %v): count %d, want %d", i, depth, err, got, want)
		}
		// Take the holds the test expects, then release them all.
		for have := got; have < depth+1; have++ {
			require.NoError(t, lk.Lock(ctx), "iteration %d: acquisition after the lost one", i)
		}
		if c := netCount(t, e.direct, name, field); c != depth+1 {
			wrongCounts++
			t.Errorf("iteration %d: count %d after the re-acquisitions, want %d", i, c, depth+1)
		}
		for range depth + 1 {
			require.NoError(t, lk.Unlock(ctx), "iteration %d: unlock", i)
		}
		cancel()
		if left := netKeysLeft(t, e.direct); len(left) > 0 {
			orphans++
			t.Errorf("iteration %d: keys left after the unlocks:\n%s", i, netDump(e.direct, left))
		}
		if n := e.c.Stats().Holds; n != 0 {
			renewalsLeft++
			t.Errorf("iteration %d: %d renewal entries after the unlocks", i, n)
		}
		if t.Failed() && i > 10 {
			break // the first failures say it all
		}
	}
	t.Logf("T05 %s: %d lost acquire replies (half on re-entry) in %v, %d Locks failed, %d succeeded, %d wrong counts (never +2), %d orphans, %d renewals left, %d not dropped; errors: %v",
		k.name, iters, time.Since(start).Round(time.Millisecond), failed, succeeded, wrongCounts, orphans, renewalsLeft, notDropped, &errs)
	require.Zero(t, notDropped, "iterations in which the proxy dropped no acquire reply")
}
