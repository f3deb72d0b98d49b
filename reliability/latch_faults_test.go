package reliability

// T30 (docs/reliability.md): the count-down latch (Redisson's
// RCountDownLatch) under faults.
//
//   - A CountDown whose reply is lost is counted once: the receipt it
//     carries makes its resends change nothing, whether a resend gets an
//     answer (one reply lost) or not (every reply lost until the call's
//     context ends). A waiter parked in Await all along returns only after
//     the last CountDown.
//   - Waiters parked in Await return within sfWakeBound of the CountDown
//     that opens the latch when its "0" message is dropped, when their
//     subscription connection is killed just before it, and when the
//     server is killed and restarted from its append-only file.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/script"
	"github.com/interlock-go/interlock/latch"
)

// t30AllLost is how long a CountDown runs with every reply lost before
// its context ends it.
const t30AllLost = 100 * time.Millisecond

func TestT30LatchLostCountDown(t *testing.T) {
	count := sized(40, 400)
	e := netStart(t)
	viewClient, err := interlock.New(e.direct)
	require.NoError(t, err)
	t.Cleanup(func() { _ = viewClient.Close() })
	name := "t30:lost"
	l, view := latch.New(e.c, name), latch.New(viewClient, name)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute+time.Duration(count)*time.Second)
	defer cancel()
	ok, err := view.TrySetCount(ctx, int64(count))
	require.NoError(t, err)
	require.True(t, ok)

	// A waiter that must not return before the last CountDown.
	opened := make(chan error, 1)
	go func() { opened <- view.Await(ctx) }()

	pred := netScripts(script.LatchCountDown())
	var (
		okCalls, failedCalls, twice, notDropped, early int
		errs                                           netErrTally
	)
	start := time.Now()
	for i := range count {
		before := e.proxy.Stats().RepliesDropped
		cctx, ccancel := ctx, context.CancelFunc(func() {})
		if i%2 == 0 {
			e.proxy.DropReplyTo(pred, 1) // the resend gets the answer
		} else {
			e.proxy.DropReplyTo(pred, -1) // no send gets one
			cctx, ccancel = context.WithTimeout(ctx, t30AllLost)
		}
		err := l.CountDown(cctx)
		ccancel()
		// A CountDown whose context ended may return before its reply
		// reached the proxy (a loaded machine): the rule stays until the
		// proxy has dropped it.
		if !netDropped(e.proxy, before, 5*time.Second) {
			notDropped++
		}
		e.proxy.DropReplyTo(nil, 0)
		if err != nil {
			failedCalls++
			errs.add(err)
		} else {
			okCalls++
		}
		// Every send ran on the server; the receipt lets one count. A
		// resend still on its way could only lower the count further, so
		// wait a little for one before judging.
		want := int64(count - i - 1)
		var got int64
		for range 5 {
			if got, err = view.Count(ctx); err != nil || got < want {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		require.NoError(t, err)
		switch {
		case got < want:
			twice++
			t.Errorf("count-down %d: count %d, want %d: counted twice", i+1, got, want)
		case got > want:
			t.Errorf("count-down %d: count %d, want %d: not counted", i+1, got, want)
		}
		if want > 0 {
			select {
			case err := <-opened:
				early++
				t.Errorf("count-down %d: Await returned (%v) with the count at %d", i+1, err, got)
			default:
			}
		}
		if t.Failed() && i > 10 {
			break
		}
	}
	elapsed := time.Since(start)
	select {
	case err := <-opened:
		require.NoError(t, err, "Await after the last CountDown")
	case <-time.After(sfWakeBound):
		t.Errorf("Await had not returned %v after the last CountDown", sfWakeBound)
	}
	// A CountDown on the open latch, its reply lost, changes nothing.
	e.proxy.DropReplyTo(pred, 1)
	require.NoError(t, l.CountDown(ctx))
	e.proxy.DropReplyTo(nil, 0)
	n, err := view.Count(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "count after a CountDown of the open latch")
	t.Logf("T30 lost count-down replies: %d CountDowns in %v (half with one reply lost, half with every reply lost for %v): %d returned nil, %d failed (errors: %v); %d counted twice, %d early opens, %d not dropped",
		count, elapsed.Round(time.Millisecond), t30AllLost, okCalls, failedCalls, &errs, twice, early, notDropped)
	assert.Zero(t, notDropped, "CountDowns whose reply the proxy did not drop")
	assert.Equal(t, count/2, okCalls, "CountDowns with one reply lost that returned nil")
}

// TestT30LatchWaiters parks waiters in Await on a latch of count 1, breaks
// something (sfFaults), and counts the latch down: every waiter must
// return within sfWakeBound.
func TestT30LatchWaiters(t *testing.T) {
	rounds, waiters := sized(1, 10), sized(4, 8)
	for _, f := range sfFaults {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			e := sfStart(t, f)
			var (
				all            []time.Duration
				errs           netErrTally
				killed, pushes int64
			)
			for r := range rounds {
				name := fmt.Sprintf("t30:%s:%d", f, r)
				waker, l := latch.New(e.waker, name), latch.New(e.c, name)
				ctx, cancel := context.WithTimeout(t.Context(), sfHung+time.Minute)
				require.NoError(t, sfRetryConn(func() error {
					ok, err := waker.TrySetCount(ctx, 1)
					if err == nil && !ok {
						err = errors.New("the latch exists")
					}
					return err
				}), "round %d: TrySetCount", r)
				res := sfRound(t, e, f, keys.LatchChannel(name), waiters,
					func(ctx context.Context, _ int) error { return l.Await(ctx) },
					func(ctx context.Context) error {
						// Still closed (the restarted server reloaded it).
						if n, err := waker.Count(ctx); err != nil || n != 1 {
							t.Errorf("round %d: count %d before the count-down (%v)", r, n, err)
						}
						return waker.CountDown(ctx)
					})
				cancel()
				sfCheckRound(t, "latch", f, waiters, res)
				all = append(all, res.delays...)
				errs.merge(&res.errs)
				killed += res.killed
				pushes += res.pushes
				if t.Failed() {
					break
				}
			}
			t.Logf("T30 latch %s: %d rounds × %d waiters, Await returned after the count-down %s (bound %v); failed calls retried: %v; subscription connections killed %d; messages dropped %d",
				f, rounds, waiters, sfDurations(all), sfWakeBound, &errs, killed, pushes)
		})
	}
}
