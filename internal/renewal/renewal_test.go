package renewal_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/renewal"
	"github.com/interlock-go/interlock/internal/report"
	"github.com/interlock-go/interlock/internal/script"
)

var addr string

func TestMain(m *testing.M) {
	redistest.Main(m, func() (func(), error) {
		s, err := redistest.Start()
		if err != nil {
			return nil, err
		}
		addr = s.Addr()
		return s.Stop, nil
	})
}

var errLost = errors.New("test: lost")

var task = &renewal.Task{
	Script: script.Renew(),
	Args: func(lease time.Duration, chunk []*renewal.Entry) (keys, argv []string) {
		argv = append(argv, strconv.FormatInt(lease.Milliseconds(), 10))
		for _, e := range chunk {
			keys = append(keys, e.Key)
			argv = append(argv, e.Owner)
		}
		return keys, argv
	},
	Lost:       errLost,
	KeepLosses: true,
}

// counting counts the DoMulti calls made through it and their duration.
type counting struct {
	rueidis.Client
	calls atomic.Int64 // DoMulti calls
	most  atomic.Int64 // the most commands in one
	ticks chan time.Duration
}

func (c *counting) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	start := time.Now()
	res := c.Client.DoMulti(ctx, cmds...)
	c.calls.Add(1)
	for n := int64(len(cmds)); ; {
		if m := c.most.Load(); n <= m || c.most.CompareAndSwap(m, n) {
			break
		}
	}
	if c.ticks != nil {
		select {
		case c.ticks <- time.Since(start):
		default:
		}
	}
	return res
}

// renewedLease is the lease of the tests whose holds must outlive it by
// being renewed: a renewal every second, each with two to spare for the
// late timers and replies of a loaded 2-core machine (the container matrix
// runs three servers' suites beside the packages; a 1 s lease saw a round
// answer after its hold's validity there, and the hold was rightly lost).
const renewedLease = 3 * time.Second

func newScheduler(t *testing.T, rc rueidis.Client, cfg renewal.Config) *renewal.Scheduler {
	t.Helper()
	s, err := renewal.New(rc, cfg)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// hold writes a lock hash as the acquire script would.
func hold(t *testing.T, rc rueidis.Client, key, owner string, lease time.Duration) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, rc.Do(ctx, rc.B().Hset().Key(key).FieldValue().FieldValue(owner, "1").Build()).Error())
	require.NoError(t, rc.Do(ctx, rc.B().Pexpire().Key(key).Milliseconds(lease.Milliseconds()).Build()).Error())
}

func pttl(t *testing.T, rc rueidis.Client, key string) int64 {
	t.Helper()
	n, err := rc.Do(context.Background(), rc.B().Pttl().Key(key).Build()).AsInt64()
	require.NoError(t, err)
	return n
}

func TestRenewsWatchdogHolds(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	const lease = renewedLease
	s := newScheduler(t, rc, renewal.Config{Lease: lease, BatchSize: 2})
	keys := []string{"renew:a:" + t.Name(), "renew:b:" + t.Name(), "renew:c:" + t.Name()}
	for _, k := range keys {
		hold(t, rc, k, "me:1", lease)
		require.NoError(t, s.Hold(k, "me:1", task, 0, time.Now()))
	}
	time.Sleep(3 * lease / 2) // past the lease: only renewals keep the keys
	for _, k := range keys {
		p := pttl(t, rc, k)
		assert.Greater(t, p, int64(0), k)
		assert.LessOrEqual(t, p, lease.Milliseconds(), k)
	}
	assert.Equal(t, 3, s.Len())
}

func TestReportsLostKey(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	const lease = 2 * time.Second
	var lost atomic.Int64
	s := newScheduler(t, rc, renewal.Config{Lease: lease, BatchSize: 100, Observer: observer{lost: &lost}})
	key := "renew:lost:" + t.Name()
	hold(t, rc, key, "me:1", lease)
	require.NoError(t, s.Hold(key, "me:1", task, 0, time.Now()))
	g := guard(t, s, key, "me:1")

	require.NoError(t, rc.Do(context.Background(), rc.B().Del().Key(key).Build()).Error())
	deleted := time.Now()
	<-g.Done()
	assert.ErrorIs(t, context.Cause(g), errLost)
	// Found by the next renewal, an interval at most, plus a second for the
	// late wake-ups of a loaded machine (latency, not safety): still short
	// of the 2s validity whose end would have found it otherwise.
	assert.Less(t, time.Since(deleted), s.Interval()+time.Second)
	assert.Zero(t, s.Len())
	reportedOnce(t, &lost)
}

func TestReleasedEntryIsNeverRenewed(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	const lease = 300 * time.Millisecond
	s := newScheduler(t, rc, renewal.Config{Lease: lease, BatchSize: 100})
	key := "renew:released:" + t.Name()
	hold(t, rc, key, "me:1", lease)
	require.NoError(t, s.Hold(key, "me:1", task, 0, time.Now()))
	g := guard(t, s, key, "me:1")

	_, held, end := s.Release(key, "me:1")
	require.True(t, held)
	end(renewal.Released)
	<-g.Done()
	assert.ErrorIs(t, context.Cause(g), context.Canceled)
	assert.Zero(t, s.Len())
	// The same owner's field, if it came back with a short TTL, is left to
	// expire.
	hold(t, rc, key, "me:1", lease)
	time.Sleep(lease + 100*time.Millisecond)
	assert.Equal(t, int64(-2), pttl(t, rc, key), "a released entry was renewed")
}

func TestPartialReleaseKeepsRenewing(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	const lease = renewedLease
	s := newScheduler(t, rc, renewal.Config{Lease: lease, BatchSize: 100})
	key := "renew:partial:" + t.Name()
	hold(t, rc, key, "me:1", lease)
	require.NoError(t, s.Hold(key, "me:1", task, 0, time.Now()))
	require.NoError(t, s.Hold(key, "me:1", task, 5*time.Second, time.Now()))
	assert.Equal(t, 2, s.Holds(key, "me:1"))

	// Releasing the inner lease hold leaves the watchdog hold: the lock keeps
	// the watchdog lease and is still renewed.
	keep, held, end := s.Release(key, "me:1")
	assert.Equal(t, lease, keep)
	assert.True(t, held)
	end(renewal.Decremented)
	assert.Equal(t, 1, s.Holds(key, "me:1"))
	end(renewal.Decremented) // only the first call counts
	assert.Equal(t, 1, s.Holds(key, "me:1"))
	time.Sleep(3 * lease / 2) // past the lease: only renewals keep the key
	assert.Greater(t, pttl(t, rc, key), int64(0))
}

func TestNoEntry(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	const lease = 300 * time.Millisecond
	s := newScheduler(t, rc, renewal.Config{Lease: lease, BatchSize: 100})
	key := "renew:none:" + t.Name()
	assert.Zero(t, s.Holds(key, "me:1"))
	assert.Zero(t, s.Remaining(key, "me:1"))
	g, ok := s.Guard(context.Background(), key, "me:1")
	assert.False(t, ok)
	assert.Nil(t, g)
	keep, held, end := s.Release(key, "me:1")
	assert.Equal(t, lease, keep)
	assert.False(t, held)
	require.NotNil(t, end)
	end(renewal.Released)
	end(renewal.NotHeld)
	assert.Zero(t, s.Len())

	// Another owner's entry is not this owner's.
	require.NoError(t, s.Hold(key, "me:2", task, 0, time.Now()))
	_, ok = s.Guard(context.Background(), key, "me:1")
	assert.False(t, ok)
	_, held, _ = s.Release(key, "me:1")
	assert.False(t, held)
	assert.Equal(t, 1, s.Holds(key, "me:2"))
}

func TestReleasePausesRenewal(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	const lease = 300 * time.Millisecond
	var lost atomic.Int64
	started := time.Now()
	s := newScheduler(t, rc, renewal.Config{Lease: lease, BatchSize: 100, Observer: observer{lost: &lost}})
	key := "renew:paused:" + t.Name()
	hold(t, rc, key, "me:1", lease)
	held := time.Now()
	require.NoError(t, s.Hold(key, "me:1", task, 0, held))
	g := guard(t, s, key, "me:1")

	// While the unlock is in flight nothing renews the key; an unlock
	// not answered within the validity leaves the hold lost.
	_, ok, end := s.Release(key, "me:1")
	require.True(t, ok)
	// Released before the first tick, unless a loaded machine held this
	// goroutine back: then a round sent before the release may have
	// renewed the key, as it may.
	beforeTick := time.Since(started) < s.Interval()
	time.Sleep(lease / 2)
	// Valid until the lease has passed; a loaded machine may wake this
	// goroutine later than that (latency, not safety).
	if err := g.Err(); time.Since(held) < lease {
		assert.NoError(t, err)
	}
	assert.Equal(t, 1, s.Holds(key, "me:1"))
	<-g.Done()
	ended := time.Now()
	// The key went with the validity, by the time the guard ended. One
	// read rather than a poll with a 50ms deadline, which a loaded
	// machine misses: what the key had left when the guard ended is what
	// the read found plus the time from the guard's end to its send.
	sent := time.Now()
	if p := pttl(t, rc, key); beforeTick {
		left := time.Duration(p)*time.Millisecond + sent.Sub(ended)
		assert.True(t, p == -2 || (p >= 0 && left <= 50*time.Millisecond), "renewed during a release: %v left", left)
	}
	assert.ErrorIs(t, context.Cause(g), errLost)
	assert.Zero(t, s.Len())
	reportedOnce(t, &lost)
	end(renewal.Unknown) // the late answer changes nothing
	end(renewal.Unknown)
	assert.Zero(t, s.Len())

	// An unknown outcome within the validity no longer counts the hold,
	// and keeps the entry, not renewed: it is lost when its validity ends.
	require.NoError(t, s.Hold(key, "me:1", task, 0, time.Now()))
	g = guard(t, s, key, "me:1")
	_, ok, end = s.Release(key, "me:1")
	require.True(t, ok)
	end(renewal.Unknown)
	end(renewal.Unknown) // only the first call counts
	assert.Zero(t, s.Holds(key, "me:1"))
	assert.Equal(t, 1, s.Len())
	<-g.Done()
	assert.ErrorIs(t, context.Cause(g), errLost)
	assert.Zero(t, s.Len())
}

// An owner that acquires again after an unlock without an answer, and
// releases what it took, holds nothing here: the server's count may be one
// higher, and nothing renews it, so the key expires within a lease. (It
// used to count the unanswered hold, renewed for ever once the owner took
// the lock again.)
func TestUnknownReleaseIsNotRevivedByTheNextHold(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	const lease = renewedLease
	s := newScheduler(t, rc, renewal.Config{Lease: lease, BatchSize: 100})
	key := "renew:unknown:" + t.Name()
	hold(t, rc, key, "me:1", lease)
	require.NoError(t, s.Hold(key, "me:1", task, 0, time.Now()))
	_, held, end := s.Release(key, "me:1")
	require.True(t, held)
	end(renewal.Unknown) // the unlock never reached the server

	hold(t, rc, key, "me:1", lease) // a re-entry on the server: count 2
	require.NoError(t, s.Hold(key, "me:1", task, 0, time.Now()))
	g := guard(t, s, key, "me:1")
	assert.Equal(t, 1, s.Holds(key, "me:1"))
	time.Sleep(3 * lease / 2)
	assert.NoError(t, g.Err(), "the new hold is renewed")
	assert.Positive(t, pttl(t, rc, key))

	_, held, end = s.Release(key, "me:1")
	require.True(t, held)
	end(renewal.Decremented) // the server keeps the unanswered one
	assert.ErrorIs(t, context.Cause(g), context.Canceled)
	assert.Zero(t, s.Len())
	// Within the lease of the last renewal; the second lease is for a
	// renewal in flight that reaches a loaded server late.
	assert.Eventually(t, func() bool { return pttl(t, rc, key) == -2 }, 2*lease, 10*time.Millisecond,
		"the hold the owner no longer counts is still renewed")
}

func TestReleaseKeepsTheRemainingLease(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	const lease = 30 * time.Second
	s := newScheduler(t, rc, renewal.Config{Lease: lease, BatchSize: 100})
	key := "renew:keeplease:" + t.Name()
	sent := time.Now()
	require.NoError(t, s.Hold(key, "me:1", task, 5*time.Second, sent))
	require.NoError(t, s.Hold(key, "me:1", task, 2*time.Second, time.Now()))
	keep, held, end := s.Release(key, "me:1")
	require.True(t, held)
	assert.Equal(t, 5*time.Second, keep, "the outer hold's lease")
	end(renewal.Decremented)
	assert.Equal(t, 1, s.Holds(key, "me:1"))
	// The outer lease, counted from its send: less only the time since,
	// however long a loaded machine took (latency, not safety).
	left := s.Remaining(key, "me:1")
	assert.LessOrEqual(t, left, 5*time.Second)
	assert.GreaterOrEqual(t, left, 5*time.Second-time.Since(sent))

	keep, held, end = s.Release(key, "me:1")
	require.True(t, held)
	assert.Equal(t, lease, keep, "no hold remains")
	end(renewal.Released)
	assert.Zero(t, s.Len())
}

func TestNotHeldOutcomeLosesTheEntry(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	s := newScheduler(t, rc, renewal.Config{Lease: 30 * time.Second, BatchSize: 100})
	key := "renew:notheld:" + t.Name()
	require.NoError(t, s.Hold(key, "me:1", task, 0, time.Now()))
	require.NoError(t, s.Hold(key, "me:1", task, 0, time.Now()))
	g := guard(t, s, key, "me:1")
	_, held, end := s.Release(key, "me:1")
	require.True(t, held)
	end(renewal.NotHeld)
	assert.ErrorIs(t, context.Cause(g), errLost)
	assert.Zero(t, s.Holds(key, "me:1"))
	assert.Zero(t, s.Len())
}

func TestLeaseHoldsAreForgottenAfterTheirLease(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	s := newScheduler(t, rc, renewal.Config{Lease: 300 * time.Millisecond, BatchSize: 100})
	key := "renew:lease:" + t.Name()
	require.NoError(t, s.Hold(key, "me:1", task, 200*time.Millisecond, time.Now()))
	g := guard(t, s, key, "me:1")
	<-g.Done()
	assert.ErrorIs(t, context.Cause(g), errLost)
	require.Eventually(t, func() bool { return s.Len() == 0 }, 2*time.Second, 10*time.Millisecond)
}

func TestExpiredLeaseHoldsDoNotCount(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	s := newScheduler(t, rc, renewal.Config{Lease: 30 * time.Second, BatchSize: 100})
	key := "renew:expired:" + t.Name()
	require.NoError(t, s.Hold(key, "me:1", task, 50*time.Millisecond, time.Now()))
	old := renewal.LookupEntry(s, key, "me:1")
	g := guard(t, s, key, "me:1")
	time.Sleep(60 * time.Millisecond)
	assert.Zero(t, s.Holds(key, "me:1"), "the lease ran out")

	require.NoError(t, s.Hold(key, "me:1", task, time.Second, time.Now()))
	e := renewal.LookupEntry(s, key, "me:1")
	assert.NotSame(t, old, e, "a new acquisition after the lease starts a new entry")
	assert.Equal(t, 1, s.Holds(key, "me:1"))
	<-g.Done()
	assert.ErrorIs(t, context.Cause(g), errLost)
}

func TestFallsBackToEvalAfterScriptFlush(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	const lease = renewedLease
	s := newScheduler(t, rc, renewal.Config{Lease: lease, BatchSize: 100})
	key := "renew:flush:" + t.Name()
	hold(t, rc, key, "me:1", lease)
	require.NoError(t, s.Hold(key, "me:1", task, 0, time.Now()))
	for range 3 { // past the lease: only renewals keep the key
		require.NoError(t, rc.Do(context.Background(), rc.B().ScriptFlush().Build()).Error())
		time.Sleep(lease / 2)
	}
	assert.Greater(t, pttl(t, rc, key), int64(0))
	assert.Equal(t, 1, s.Len())
}

func TestUnreachableServerLosesHoldsAfterTheLease(t *testing.T) {
	srv := redistest.Standalone(t)
	redistest.RequireProcess(t)
	rc := redistest.NewClient(t, srv.Addr())
	const lease = 600 * time.Millisecond
	var failed atomic.Int64
	s := newScheduler(t, rc, renewal.Config{Lease: lease, BatchSize: 100, Observer: observer{failed: &failed}})
	key := "renew:down:" + t.Name()
	hold(t, rc, key, "me:1", lease)
	require.NoError(t, s.Hold(key, "me:1", task, 0, time.Now()))
	g := guard(t, s, key, "me:1")

	require.NoError(t, srv.Kill())
	killed := time.Now()
	<-g.Done()
	assert.ErrorIs(t, context.Cause(g), errLost)
	took := time.Since(killed)
	// Within the lease and the grace of a round in flight, plus a second
	// for the late timers of a loaded machine (latency, not safety).
	assert.Less(t, took, lease+s.Interval()+time.Second)
	// The rounds in flight fail by their own deadline, after the loss.
	require.Eventually(t, func() bool { return failed.Load() > 0 }, 2*lease+time.Second, 10*time.Millisecond)
	t.Logf("loss reported %v after the server died", took.Round(time.Millisecond))
}

// hanging answers no DoMulti: each blocks until its context ends, as
// rueidis's retries of a renewal do while the server is gone.
type hanging struct{ rueidis.Client }

func (h hanging) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	<-ctx.Done()
	res := make([]rueidis.RedisResult, len(cmds))
	for i := range res {
		res[i] = rueidis.NewErrorResult(ctx.Err())
	}
	return res
}

// A server that never answers must not delay the loss past the hold's
// validity by more than one interval, however many rounds wait for it:
// a round sent before the validity ended keeps the hold at most that much
// longer, for the reply that would confirm it.
func TestHangingServerLosesHoldsWhenTheyExpire(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	const lease = 3 * time.Second // a tick every second
	s := newScheduler(t, hanging{rc}, renewal.Config{Lease: lease, BatchSize: 100})
	key := "renew:hang:" + t.Name()
	held := time.Now()
	require.NoError(t, s.Hold(key, "me:1", task, 0, held))
	g := guard(t, s, key, "me:1")
	// A second hold, whose validity ends between two ticks, after the
	// tick that gave up on the first.
	time.Sleep(lease / 5)
	held2 := time.Now()
	require.NoError(t, s.Hold(key+":2", "me:1", task, 0, held2))
	g2 := guard(t, s, key+":2", "me:1")
	for i, h := range []struct {
		g    context.Context
		held time.Time
	}{{g, held}, {g2, held2}} {
		<-h.g.Done()
		took := time.Since(h.held)
		assert.ErrorIs(t, context.Cause(h.g), errLost)
		assert.GreaterOrEqual(t, took, lease)
		// The grace is 3/4 of an interval; the rest of the interval and
		// half a second are for late timers on a loaded machine (latency,
		// not safety). A hold kept for its hanging round's reply would be
		// lost two intervals late at the earliest.
		assert.Less(t, took, lease+s.Interval()+500*time.Millisecond, "hold %d lost too long after its validity", i+1)
		t.Logf("hold %d: loss reported %v after it was taken (lease %v)", i+1, took.Round(time.Millisecond), lease)
	}
}

// slow delays every DoMulti's replies by d after the server ran the
// commands, as a congested link does.
type slow struct {
	rueidis.Client
	d time.Duration
}

func (c slow) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	res := c.Client.DoMulti(ctx, cmds...)
	select {
	case <-time.After(c.d):
		return res
	case <-ctx.Done():
		for i := range res {
			res[i] = rueidis.NewErrorResult(ctx.Err())
		}
		return res
	}
}

// Replies slower than the interval between rounds (but faster than the
// lease) confirm every renewal: rounds overlap rather than wait for each
// other, and the hold is never lost.
func TestSlowRepliesKeepHoldsValid(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	// A round every 500ms, answered 750ms later: each confirms with more
	// than 600ms to spare, for the late timers of a loaded machine.
	const lease = 1500 * time.Millisecond
	var failed atomic.Int64
	s := newScheduler(t, slow{rc, lease / 2}, renewal.Config{Lease: lease, BatchSize: 100, Observer: observer{failed: &failed}})
	key := "renew:slow:" + t.Name()
	// Loaded first: the fallback to EVAL after NOSCRIPT costs a second
	// slow round trip.
	require.NoError(t, rc.Do(context.Background(), rc.B().ScriptLoad().Script(task.Script.Source()).Build()).Error())
	hold(t, rc, key, "me:1", lease)
	require.NoError(t, s.Hold(key, "me:1", task, 0, time.Now()))
	g := guard(t, s, key, "me:1")
	select {
	case <-g.Done():
		t.Fatalf("lost although every renewal was confirmed within the lease: %v", context.Cause(g))
	case <-time.After(3 * lease):
	}
	assert.Positive(t, s.Remaining(key, "me:1"))
	assert.Greater(t, pttl(t, rc, key), int64(0))
	assert.Zero(t, failed.Load())
}

// Only tasks that keep losses are remembered, and at most a bounded
// number of them.
func TestLostCauseIsBounded(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	s := newScheduler(t, rc, renewal.Config{Lease: time.Second, BatchSize: 100})
	once := &renewal.Task{Script: task.Script, Args: task.Args, Lost: errLost}
	require.NoError(t, s.Hold("renew:once", "permit:1", once, 0, time.Now()))
	s.Lose("renew:once", "permit:1")
	assert.NoError(t, s.LostCause("renew:once", "permit:1"), "a task that keeps no losses")
	for i := range renewal.MaxLost + 10 {
		owner := fmt.Sprintf("me:%d", i)
		require.NoError(t, s.Hold("renew:bounded", owner, task, 0, time.Now()))
		s.Lose("renew:bounded", owner)
	}
	assert.Equal(t, renewal.MaxLost, renewal.LostLen(s))
}

// A hold is lost when its validity ends unconfirmed, and the owner's
// Unlock can learn so without asking the server.
func TestLostCauseAfterUnconfirmedLease(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	const lease = 300 * time.Millisecond
	s := newScheduler(t, hanging{rc}, renewal.Config{Lease: lease, BatchSize: 100})
	key := "renew:lostcause:" + t.Name()
	require.NoError(t, s.Hold(key, "me:1", task, 0, time.Now()))
	g := guard(t, s, key, "me:1")
	assert.NoError(t, s.LostCause(key, "me:1"))
	<-g.Done()
	assert.ErrorIs(t, s.LostCause(key, "me:1"), errLost)
	assert.ErrorIs(t, context.Cause(g), errLost)
	assert.NoError(t, s.LostCause(key, "other:1"))
}

func TestCloseEndsEntries(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	s, err := renewal.New(rc, renewal.Config{Lease: time.Second, BatchSize: 100})
	require.NoError(t, err)
	key := "renew:close:" + t.Name()
	require.NoError(t, s.Hold(key, "me:1", task, 0, time.Now()))
	g := guard(t, s, key, "me:1")
	s.Close()
	s.Close()
	assert.ErrorIs(t, context.Cause(g), renewal.ErrClosed)
	err = s.Hold("x", "me:1", task, 0, time.Now())
	assert.ErrorIs(t, err, renewal.ErrClosed)
}

func TestNewValidates(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	_, err := renewal.New(nil, renewal.Config{Lease: time.Second, BatchSize: 1})
	assert.Error(t, err)
	_, err = renewal.New(rc, renewal.Config{Lease: time.Millisecond, BatchSize: 1})
	assert.Error(t, err)
	_, err = renewal.New(rc, renewal.Config{Lease: time.Second})
	assert.Error(t, err)
}

// guard returns the guard of owner's hold on key, which must exist.
func guard(t *testing.T, s *renewal.Scheduler, key, owner string) context.Context {
	t.Helper()
	g, ok := s.Guard(context.Background(), key, owner)
	require.True(t, ok, "no entry for %s %s", key, owner)
	return g
}

type observer struct{ failed, lost *atomic.Int64 }

func (o observer) Renewed(t renewal.Tick) {
	if o.failed != nil && t.Failures > 0 {
		o.failed.Add(1)
	}
}

func (o observer) Lost(key string, label *renewal.Label, cause error) {
	if o.lost != nil {
		o.lost.Add(1)
	}
}

// reportedOnce waits for the Observer's one Lost call: the Scheduler
// reports a loss after it has cancelled the entry's guards, so a test
// woken by a guard can get there first.
func reportedOnce(t *testing.T, lost *atomic.Int64) {
	t.Helper()
	require.Eventually(t, func() bool { return lost.Load() > 0 }, 2*time.Second, time.Millisecond, "loss not reported")
	assert.Equal(t, int64(1), lost.Load())
}

func TestReletTurnsALeaseIntoAWatchdogHold(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	const lease = renewedLease
	s := newScheduler(t, rc, renewal.Config{Lease: lease, BatchSize: 100})
	key := "renew:relet:" + t.Name()
	hold(t, rc, key, "me:1", lease)
	require.NoError(t, s.Hold(key, "me:1", task, 100*time.Millisecond, time.Now()))
	assert.False(t, s.Relet("renew:none:"+t.Name(), "me:1", 0, time.Now()), "no entry")

	require.True(t, s.Relet(key, "me:1", 0, time.Now()))
	g := guard(t, s, key, "me:1")
	time.Sleep(3 * lease / 2)
	require.NoError(t, g.Err(), "renewed as a watchdog hold, past the old lease")
	assert.Greater(t, pttl(t, rc, key), int64(0))
	assert.Equal(t, 1, s.Holds(key, "me:1"), "one hold replaces the old ones")

	require.True(t, s.Relet(key, "me:1", 100*time.Millisecond, time.Now()))
	g = guard(t, s, key, "me:1")
	<-g.Done()
	assert.ErrorIs(t, context.Cause(g), errLost, "the new lease ran out")
}

// A guard of a hold with an explicit lease ends with the cause that ended
// the hold, even when it is nested in another such guard and both end at
// once: the lease's deadline must never race the cause to the guard.
func TestLeaseGuardKeepsTheDropCause(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	s := newScheduler(t, rc, renewal.Config{Lease: time.Second, BatchSize: 100})
	key := "renew:drop:" + t.Name()
	for i := range 500 {
		ctx := context.Background()
		for _, owner := range []string{"a", "b", "c"} {
			require.NoError(t, s.Hold(key, owner, task, time.Minute, time.Now()))
			g, ok := s.Guard(ctx, key, owner)
			require.True(t, ok)
			ctx = g
		}
		s.Drop(key)
		<-ctx.Done()
		require.ErrorIs(t, context.Cause(ctx), report.ErrForceUnlocked, "round %d", i)
		require.ErrorIs(t, context.Cause(ctx), task.Lost, "round %d", i)
	}
}

// A hold that a renewal finds gone while its key is being force-unlocked
// through this Scheduler's client was lost to that forced unlock, not to
// a deletion by someone else: the renewal may see the key gone before
// ForceUnlock gets to Drop.
func TestGoneWhileForcingIsForceUnlocked(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	const lease = renewedLease
	s := newScheduler(t, rc, renewal.Config{Lease: lease, BatchSize: 100})
	for _, forcing := range []bool{true, false} {
		key := "renew:forcing:" + strconv.FormatBool(forcing) + ":" + t.Name()
		hold(t, rc, key, "me:1", lease)
		require.NoError(t, s.Hold(key, "me:1", task, 0, time.Now()))
		g := guard(t, s, key, "me:1")
		if forcing {
			done := s.Forcing(key)
			defer done()
		}
		require.NoError(t, rc.Do(t.Context(), rc.B().Del().Key(key).Build()).Error())
		<-g.Done() // at the next renewal round
		if forcing {
			assert.ErrorIs(t, context.Cause(g), report.ErrForceUnlocked)
		} else {
			assert.ErrorIs(t, context.Cause(g), report.ErrKeyGone)
		}
	}
}

// ticks is an Observer that passes on every Tick and every loss's label.
type ticks struct {
	ticks chan renewal.Tick
	lost  chan *renewal.Label
}

func (o ticks) Renewed(t renewal.Tick) {
	select {
	case o.ticks <- t:
	default:
	}
}

func (o ticks) Lost(key string, label *renewal.Label, cause error) { o.lost <- label }

// TestObserverHearsTicksAndLabels: a tick reports its entries, chunks and
// round trip; a loss comes with the label its first hold was given; an
// entry remembers when its first hold was acquired.
func TestObserverHearsTicksAndLabels(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	const lease = renewedLease
	obs := ticks{ticks: make(chan renewal.Tick, 16), lost: make(chan *renewal.Label, 4)}
	s := newScheduler(t, rc, renewal.Config{Lease: lease, BatchSize: 2, Observer: obs})
	// One slot: a tick groups the entries by slot, then chunks each group.
	tag := "{renew:t:" + t.Name() + "}"
	keys := []string{tag + ":a", tag + ":b", tag + ":c"}
	first := time.Now().Add(-lease / 3) // a hold sent earlier, still valid
	labels := make([]*renewal.Label, len(keys))
	for i, k := range keys {
		hold(t, rc, k, "me:1", lease)
		labels[i] = &renewal.Label{Kind: "test", Name: k}
		require.NoError(t, s.HoldLabeled(k, "me:1", task, 0, first, labels[i]))
	}
	require.NoError(t, s.HoldLabeled(keys[0], "me:1", task, 0, time.Now(), &renewal.Label{Name: "ignored"}))
	assert.Equal(t, time.Duration(0), s.HeldSince(keys[0], "me:1").Sub(first), "since the first hold")
	assert.True(t, s.HeldSince("renew:none", "me:1").IsZero())

	timeout := time.After(5 * time.Second)
	for done := false; !done; {
		select {
		case tick := <-obs.ticks:
			if tick.Entries < 3 { // a tick between the Holds
				continue
			}
			assert.Equal(t, renewal.Tick{Entries: 3, Chunks: 2, Duration: tick.Duration}, tick)
			assert.Positive(t, tick.Duration)
			done = true
		case <-timeout:
			t.Fatal("no tick of the three entries reported")
		}
	}
	require.NoError(t, rc.Do(context.Background(), rc.B().Del().Key(keys[0]).Build()).Error())
	select {
	case label := <-obs.lost:
		assert.Same(t, labels[0], label, "the first hold's label")
	case <-time.After(5 * time.Second):
		t.Fatal("no loss reported")
	}
}
