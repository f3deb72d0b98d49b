package reliability

// The rate limiter under lost replies (docs/reliability.md, T27's row for
// Redisson's RRateLimiter): an acquisition whose reply is lost, once (the
// rueidis resend under the same receipt) or every time until its context
// ends (the Client takes it back), never takes permits twice. The
// limiter's interval is an hour, so nothing leaves the window during the
// run: once the background clean-up is done, the free count is exactly
// the rate minus the permits the calls reported granted, and the window's
// zset holds exactly those grants.

import (
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/script"
	"github.com/interlock-go/interlock/ratelimit"
)

// t27RateLimit is the rate of T27's limiter: more than every iteration
// can take.
const t27RateLimit = 100_000

func TestT27RateLimitLostReplies(t *testing.T) {
	iters := sized(60, 600)
	e := netStart(t)
	viewClient, err := interlock.New(e.direct)
	require.NoError(t, err)
	t.Cleanup(func() { _ = viewClient.Close() })
	name := "t27:ratelimit"
	l, view := ratelimit.New(e.c, name), ratelimit.New(viewClient, name)
	ctx, cancel := context.WithTimeout(t.Context(), time.Duration(iters)*time.Second+time.Minute)
	defer cancel()
	ok, err := view.TrySetRate(ctx, ratelimit.Config{Rate: t27RateLimit, Interval: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)
	acqPred := netScripts(script.RLAcquire())

	var (
		granted                             int64 // permits the calls reported taken
		okCalls, failed, notDropped         int
		doubleCounts, leaks, zsetMismatches int
		errs                                netErrTally
		settleMax                           time.Duration
	)
	start := time.Now()
	for i := range iters {
		n := 1 + i%3
		mode := i % 3 // 0: no fault, 1: one reply lost, 2: every reply lost for t27AllLost
		before := e.proxy.Stats().RepliesDropped
		actx, acancel := ctx, context.CancelFunc(func() {})
		switch mode {
		case 1:
			e.proxy.DropReplyTo(acqPred, 1)
		case 2:
			e.proxy.DropReplyTo(acqPred, -1)
			actx, acancel = context.WithTimeout(ctx, t27AllLost)
		}
		var ok bool
		if i%5 == 4 { // the blocking call takes the same path
			err = l.Acquire(actx, n)
			ok = err == nil
		} else {
			ok, err = l.TryAcquire(actx, n, 0)
		}
		acancel()
		if mode == 2 {
			netDropped(e.proxy, before, t27LateWrite())
		}
		e.proxy.DropReplyTo(nil, 0)
		if mode > 0 && e.proxy.Stats().RepliesDropped == before {
			notDropped++
		}
		switch {
		case err != nil:
			failed++
			sfAddErr(&errs, err)
		case ok:
			okCalls++
			granted += int64(n)
		default:
			t.Errorf("iteration %d: TryAcquire(%d) refused with %d of %d taken", i, n, granted, t27RateLimit)
		}

		// Free permits only rise back towards the rate minus the grants
		// (a lost acquisition taken back); fewer free than that once
		// settled is a double count, more is a grant the server forgot.
		want := int64(t27RateLimit) - granted
		s, err := sfSettle(e.c, view.AvailablePermits, want, t27Settle)
		switch {
		case err != nil:
			t.Errorf("iteration %d: reading the count: %v", i, err)
		case s.got < want:
			doubleCounts++
			t.Errorf("iteration %d: %d free after %v, want %d: %d permits taken twice", i, s.got, t27Settle, want, want-s.got)
		case s.got > want:
			leaks++
			t.Errorf("iteration %d: %d free, want %d: a grant the server does not count", i, s.got, want)
		}
		settleMax = max(settleMax, s.waited)
		if sum, members := t27RateZSet(t, e, name); sum != granted {
			zsetMismatches++
			t.Errorf("iteration %d: the window holds %d permits in %d members, the calls were granted %d", i, sum, members, granted)
		}
		if doubleCounts+leaks+zsetMismatches > 0 && i > 10 {
			break // the first failures say it all
		}
	}
	t.Logf("T27 ratelimit: %d iterations in %v: %d granted (%d permits), %d failed (errors: %v); %d counted twice, %d leaked, %d window mismatches, %d faults not dropped; slowest settle %v",
		iters, time.Since(start).Round(time.Millisecond), okCalls, granted, failed, &errs,
		doubleCounts, leaks, zsetMismatches, notDropped, settleMax.Round(time.Millisecond))
	assert.Zero(t, notDropped, "faults in which the proxy dropped no reply")
	assert.Positive(t, failed, "some calls lost every reply")
	assert.Positive(t, okCalls, "some calls were granted")
}

// t27RateZSet returns the permits and members in the limiter's window.
func t27RateZSet(t *testing.T, e *netEnv, name string) (sum int64, members int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	all, err := e.direct.Do(ctx, e.direct.B().Zrange().Key(keys.Suffix(name, keys.RatePermitsSuffix)).Min("0").Max("-1").Build()).AsStrSlice()
	require.NoError(t, err)
	for _, m := range all {
		require.Len(t, m, int(m[0])+5, "member %x", m)
		sum += int64(binary.LittleEndian.Uint32([]byte(m[1+int(m[0]):])))
	}
	return sum, len(all)
}

// TestT27RateLimitCancellationStorm is T19 for the rate limiter: 16
// goroutines take 1-2 permits of a limiter that never runs out within the
// run (an hour's interval), each call's context cancelled 0-5 ms after it
// began. A cancelled call may have been granted on the server; the Client
// takes such grants back. Once the clean-up is done the free count and the
// window hold exactly the permits of the calls that returned granted.
func TestT27RateLimitCancellationStorm(t *testing.T) {
	n := sized(3000, 30000)
	rc := redistest.Standalone(t).Client(t)
	c, err := interlock.New(rc)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	name := "t27:storm:ratelimit"
	l := ratelimit.New(c, name)
	rate := int64(2 * n)
	ok, err := l.TrySetRate(t.Context(), ratelimit.Config{Rate: rate, Interval: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)
	var (
		next, cancelled, okCalls, granted atomic.Int64
		failures                          sync.Map
	)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range t27StormWorkers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(rand.Uint64(), uint64(w)))
			for next.Add(1) <= int64(n) {
				p := 1 + rng.IntN(2)
				ctx, cancel := context.WithCancel(context.Background())
				stop := time.AfterFunc(time.Duration(rng.Int64N(int64(t19MaxCancel)+1)), cancel)
				var err error
				if rng.IntN(2) == 0 {
					err = l.Acquire(ctx, p)
				} else {
					var ok bool
					if ok, err = l.TryAcquire(ctx, p, 0); err == nil && !ok {
						t19Count(&failures, "refused with the rate not reached")
					}
				}
				stop.Stop()
				cancel()
				switch {
				case err == nil:
					okCalls.Add(1)
					granted.Add(int64(p))
				case errors.Is(err, context.Canceled):
					cancelled.Add(1)
				default:
					t19Count(&failures, err.Error())
				}
			}
		})
	}
	wg.Wait()
	storm := time.Since(start)
	want := rate - granted.Load()
	s, err := sfSettle(c, l.AvailablePermits, want, t27Settle)
	require.NoError(t, err)
	e := &netEnv{direct: rc}
	sum, members := t27RateZSet(t, e, name)
	t.Logf("T27 storm ratelimit: %d acquisitions in %v, %d cancelled, %d granted (%d permits); after %v: %d free (want %d), the window %d permits in %d members, %d undo steps",
		n, storm.Round(time.Millisecond), cancelled.Load(), okCalls.Load(), granted.Load(),
		s.waited.Round(time.Millisecond), s.got, want, sum, members, c.Stats().UndoQueue)
	failures.Range(func(msg, count any) bool {
		t.Errorf("%d calls failed with: %s", count.(*atomic.Int64).Load(), msg)
		return true
	})
	assert.Equal(t, int64(n), cancelled.Load()+okCalls.Load(), "every acquisition either failed with ctx's error or succeeded")
	assert.Positive(t, cancelled.Load(), "some calls were cancelled")
	assert.Equal(t, want, s.got, "free permits after the storm: rate - granted")
	assert.Equal(t, granted.Load(), sum, "the window holds the granted permits, each once")
	assert.Zero(t, c.Stats().UndoQueue, "clean-up steps pending")
}
