package semaphore_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/semaphore"
)

// never is the score of a permit that never expires.
const never = 922337203685477

// timeoutKey is the zset of an expirable semaphore's acquired permits.
func timeoutKey(name string) string { return keys.Suffix(name, "timeout") }

// score returns id's score in the zset of name, and whether it is there.
func score(t *testing.T, rc rueidis.Client, name string, id semaphore.PermitID) (int64, bool) {
	t.Helper()
	v, err := rc.Do(context.Background(), rc.B().Zscore().Key(timeoutKey(name)).Member(string(id[:])).Build()).AsFloat64()
	if rueidis.IsRedisNil(err) {
		return 0, false
	}
	require.NoError(t, err)
	return int64(v), true
}

// members returns the zset of name: member bytes to score.
func members(t *testing.T, rc rueidis.Client, name string) map[string]int64 {
	t.Helper()
	zs, err := rc.Do(context.Background(), rc.B().Zrange().Key(timeoutKey(name)).Min("0").Max("-1").Withscores().Build()).AsZScores()
	require.NoError(t, err)
	out := map[string]int64{}
	for _, z := range zs {
		out[z.Member] = int64(z.Score)
	}
	return out
}

func nowMS() int64 { return time.Now().UnixMilli() }

func TestExpirableAcquire(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, rc := tg.Client(t)
		name := semName(t)
		e := semaphore.NewExpirable(c, name)
		require.True(t, redistest.Must[bool](t)(e.TrySetPermits(ctx, 4)))
		require.False(t, redistest.Must[bool](t)(e.TrySetPermits(ctx, 9)))

		at, atT := nowMS(), time.Now()
		leased := redistest.Must[[]semaphore.PermitID](t)(e.Acquire(ctx, 1, 10*time.Second))
		forever := redistest.Must[[]semaphore.PermitID](t)(e.Acquire(ctx, 1, semaphore.NoExpiry))
		watched := redistest.Must[[]semaphore.PermitID](t)(e.Acquire(ctx, 2, 0))
		require.Len(t, leased, 1)
		require.Len(t, forever, 1)
		require.Len(t, watched, 2)

		// The zset holds the 16 raw bytes of each id, scored by its expiry.
		z := members(t, rc, name)
		require.Len(t, z, 4)
		for m := range z {
			assert.Len(t, m, 16, "a member is an id's raw bytes")
		}
		for _, id := range append(append(leased, forever...), watched...) {
			assert.Len(t, id.String(), 32)
			assert.Contains(t, z, string(id[:]), "id %s", id)
			back, err := semaphore.ParsePermitID(id.String())
			require.NoError(t, err)
			assert.Equal(t, id, back)
		}
		assert.NotEqual(t, watched[0], watched[1])
		s := z[string(leased[0][:])]
		assert.InDelta(t, at+10000, s, 1000, "now + lease")
		assert.EqualValues(t, never, z[string(forever[0][:])])
		for _, id := range watched {
			assert.InDelta(t, at+30000, z[string(id[:])], 1000, "now + watchdog timeout")
		}

		assert.EqualValues(t, 0, redistest.Must[int64](t)(e.Available(ctx)))
		assert.EqualValues(t, 4, redistest.Must[int64](t)(e.Acquired(ctx)))
		assert.EqualValues(t, 4, redistest.Must[int64](t)(e.Permits(ctx)))
		assert.Equal(t, 4, c.Stats().Holds, "each permit is a hold")

		assert.Equal(t, semaphore.NoExpiry, redistest.Must[time.Duration](t)(e.LeaseLeft(ctx, forever[0])))
		// A lease counts from its acquisition's send, after atT: what is
		// left when read is at least the lease less the time since atT.
		leftOf := func(lease, read time.Duration) {
			t.Helper()
			within(t, read, lease-time.Since(atT)-time.Millisecond, lease, "lease left")
		}
		leftOf(10*time.Second, redistest.Must[time.Duration](t)(e.LeaseLeft(ctx, leased[0])))
		leftOf(30*time.Second, redistest.Must[time.Duration](t)(e.LeaseLeft(ctx, watched[0])))
		leftOf(10*time.Second, e.Remaining(leased[0]))
		assert.Greater(t, e.Remaining(forever[0]), 24*time.Hour)
		assert.Zero(t, e.Remaining(semaphore.PermitID{1}))

		// Busy: a zero wait is one attempt.
		start := time.Now()
		ids, ok, err := e.TryAcquire(ctx, 1, 0, time.Second)
		require.NoError(t, err)
		assert.False(t, ok)
		assert.Nil(t, ids)
		assert.Less(t, time.Since(start), redistest.Slack)
		assert.Len(t, members(t, rc, name), 4, "a failed attempt adds nothing")

		require.NoError(t, e.Release(ctx, leased[0], forever[0]))
		require.NoError(t, e.Release(ctx, watched...))
		assert.EqualValues(t, 4, redistest.Must[int64](t)(e.Available(ctx)))
		assert.EqualValues(t, 0, redistest.Must[int64](t)(e.Acquired(ctx)))
		assert.Zero(t, c.Stats().Holds)
		redistest.ClearReceipts(t, rc, name) // acquisitions and releases carry receipts

		// Acquire waits, and ends with its ctx.
		all := redistest.Must[[]semaphore.PermitID](t)(e.Acquire(ctx, 4, time.Minute))
		start = time.Now() // before the deadline is set, which counts from its own now
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		_, err = e.Acquire(short, 1, time.Minute)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		within(t, time.Since(start), 300*time.Millisecond, 300*time.Millisecond+redistest.Slack, "Acquire until its deadline")
		got := make(chan []semaphore.PermitID, 1)
		go func() {
			ids, err := e.Acquire(ctx, 2, time.Minute)
			assert.NoError(t, err)
			got <- ids
		}()
		require.NoError(t, e.Release(ctx, all[0]))
		select {
		case <-got:
			t.Fatal("Acquire(2) returned with 1 free")
		case <-time.After(redistest.Quiet):
		}
		start = time.Now()
		require.NoError(t, e.Release(ctx, all[1]))
		select {
		case ids := <-got:
			assert.Len(t, ids, 2)
			assert.Less(t, time.Since(start), redistest.Slack, "woken by the release's message")
		case <-time.After(redistest.Prompt):
			t.Fatal("Acquire(2) not woken")
		}
	})
}

// A waiter for an expirable semaphore whose permits are all leased wakes
// by itself when the first lease runs out: nobody announces an expiry.
func TestExpirableTryAcquireWakesAtExpiry(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, rc := tg.Client(t)
		name := semName(t)
		e := semaphore.NewExpirable(c, name)
		require.True(t, redistest.Must[bool](t)(e.TrySetPermits(ctx, 2)))
		_, err := e.Acquire(ctx, 1, 5*time.Second)
		require.NoError(t, err)
		// Listening first: a slow subscription must not eat into the lease.
		in := redistest.Listen(t, rc, keys.SemaphoreChannel(name), tg.Cluster)
		const lease = 700 * time.Millisecond
		// The lease counts from the acquisition's send: the reclaim may
		// come no earlier than that, however late the reply came.
		sentAt := time.Now()
		first := redistest.Must[[]semaphore.PermitID](t)(e.Acquire(ctx, 1, lease))
		leasedAt := time.Now()

		ids, ok, err := e.TryAcquire(ctx, 1, 5*time.Second, time.Minute)
		took := time.Since(leasedAt)
		require.NoError(t, err)
		require.True(t, ok)
		t.Logf("acquired %v after the first lease began", took)
		// Expiries travel in whole milliseconds (Redisson's format), so a
		// lease may end up to 1 ms before the monotonic clock says so.
		assert.GreaterOrEqual(t, time.Since(sentAt), lease-time.Millisecond, "reclaimed before the lease ran out")
		// The waiter subscribes between its first two tries; on a loaded
		// cluster the first SSUBSCRIBE of a Client (a new connection to the
		// node) can take longer than the lease left, and the second try then
		// acquires late: hence more slack on top, up to 3.5 s (latency),
		// still well before the 5 s wait a waiter that never woke at the
		// expiry would give up at.
		within(t, took, 0, lease+4*redistest.Slack, "wake-up at the first expiry")
		_, held := score(t, rc, name, first[0])
		assert.False(t, held, "the expired permit was reclaimed")
		assert.Len(t, ids, 1)
		// The only message is the acquiring reclaim's own.
		assert.Equal(t, []string{"1"}, in.Next(t))

		// A wait that ends before the first expiry fails at its deadline.
		start := time.Now()
		_, ok, err = e.TryAcquire(ctx, 1, 400*time.Millisecond, time.Minute)
		require.NoError(t, err)
		assert.False(t, ok)
		within(t, time.Since(start), 400*time.Millisecond, 400*time.Millisecond+2*redistest.Slack, "TryAcquire(400ms)") // latency
	})
}

func TestExpirableRelease(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, rc := tg.Client(t)
		name := semName(t)
		e := semaphore.NewExpirable(c, name)
		in := redistest.Listen(t, rc, keys.SemaphoreChannel(name), tg.Cluster)
		require.True(t, redistest.Must[bool](t)(e.TrySetPermits(ctx, 3)))
		in.Next(t)
		unknown := semaphore.PermitID{0xde, 0xad}

		ids := redistest.Must[[]semaphore.PermitID](t)(e.Acquire(ctx, 2, time.Minute))
		require.NoError(t, e.Release(ctx, ids[0]))
		assert.Equal(t, []string{"2"}, in.Next(t), "a release of one announces the free count")
		err := e.Release(ctx, ids[0])
		assert.ErrorIs(t, err, semaphore.ErrUnknownPermit)
		var ie *interlock.Error
		assert.True(t, errors.As(err, &ie), "%T", err)
		assert.False(t, redistest.Must[bool](t)(e.TryRelease(ctx, ids[0])))
		assert.ErrorIs(t, e.Release(ctx, unknown), semaphore.ErrUnknownPermit)
		assert.Empty(t, in.Next(t), "a failed release announces nothing")
		assert.EqualValues(t, 2, redistest.Must[int64](t)(e.Available(ctx)))

		// Several ids: all or none.
		more := redistest.Must[[]semaphore.PermitID](t)(e.Acquire(ctx, 1, time.Minute))
		before := state(t, rc, timeoutKey(name))
		assert.ErrorIs(t, e.Release(ctx, ids[1], unknown), semaphore.ErrUnknownPermit)
		assert.ErrorIs(t, e.Release(ctx, unknown, ids[1], more[0]), semaphore.ErrUnknownPermit)
		assert.False(t, redistest.Must[bool](t)(e.TryRelease(ctx, ids[1], more[0], unknown)))
		assert.Equal(t, before, state(t, rc, timeoutKey(name)), "nothing released")
		assert.EqualValues(t, 2, redistest.Must[int64](t)(e.Acquired(ctx)))
		assert.Equal(t, 2, c.Stats().Holds)
		in.Next(t)
		require.True(t, redistest.Must[bool](t)(e.TryRelease(ctx, ids[1], more[0])))
		assert.Equal(t, []string{"2"}, in.Next(t), "a release of several announces how many")
		assert.EqualValues(t, 3, redistest.Must[int64](t)(e.Available(ctx)))
		assert.Zero(t, c.Stats().Holds)

		// Bad lists.
		id := redistest.Must[[]semaphore.PermitID](t)(e.Acquire(ctx, 1, time.Minute))[0]
		assert.ErrorIs(t, e.Release(ctx, id, id), interlock.ErrInvalid)
		assert.ErrorIs(t, second(e.TryRelease(ctx, id, id)), interlock.ErrInvalid)
		assert.ErrorIs(t, e.Release(ctx), interlock.ErrInvalid)
		assert.ErrorIs(t, second(e.TryRelease(ctx)), interlock.ErrInvalid)
		_, held := score(t, rc, name, id)
		assert.True(t, held)
		require.NoError(t, e.Release(ctx, id))
	})
}

// A permit whose lease ran out: its release fails with ErrPermitExpired,
// and the permit comes back.
func TestExpirableReleaseExpired(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, rc := tg.Client(t)
		name := semName(t)
		e := semaphore.NewExpirable(c, name)
		require.True(t, redistest.Must[bool](t)(e.TrySetPermits(ctx, 2)))

		id := redistest.Must[[]semaphore.PermitID](t)(e.Acquire(ctx, 1, 100*time.Millisecond))[0]
		g := e.Guard(ctx, id)
		time.Sleep(300 * time.Millisecond)
		err := e.Release(ctx, id)
		require.ErrorIs(t, err, semaphore.ErrPermitExpired)
		assert.NotErrorIs(t, err, semaphore.ErrUnknownPermit)
		assert.Contains(t, err.Error(), id.String())
		_, held := score(t, rc, name, id)
		assert.False(t, held)
		assert.EqualValues(t, 2, redistest.Must[int64](t)(e.Available(ctx)), "the permit was given back")
		assert.Zero(t, c.Stats().Holds)
		<-g.Done()
		assert.ErrorIs(t, context.Cause(g), semaphore.ErrPermitLost, "a lease that ran out is a lost permit")
		assert.ErrorIs(t, e.Release(ctx, id), semaphore.ErrUnknownPermit, "once reclaimed, it is unknown")

		// In a list, an expired id fails the whole release; the others stay.
		a := redistest.Must[[]semaphore.PermitID](t)(e.Acquire(ctx, 1, 100*time.Millisecond))[0]
		b := redistest.Must[[]semaphore.PermitID](t)(e.Acquire(ctx, 1, time.Minute))[0]
		time.Sleep(300 * time.Millisecond)
		assert.ErrorIs(t, e.Release(ctx, b, a), semaphore.ErrPermitExpired)
		_, held = score(t, rc, name, b)
		assert.True(t, held, "all or none")
		assert.EqualValues(t, 1, redistest.Must[int64](t)(e.Available(ctx)), "the expired one comes back by the reclaim")
		assert.True(t, redistest.Must[bool](t)(e.TryRelease(ctx, b)))
		assert.EqualValues(t, 2, redistest.Must[int64](t)(e.Available(ctx)))

		// TryRelease reports an expired permit as false.
		a = redistest.Must[[]semaphore.PermitID](t)(e.Acquire(ctx, 1, 100*time.Millisecond))[0]
		time.Sleep(300 * time.Millisecond)
		assert.False(t, redistest.Must[bool](t)(e.TryRelease(ctx, a)))
		assert.EqualValues(t, 2, redistest.Must[int64](t)(e.Available(ctx)))
	})
}

func TestExpirableUpdateLease(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, rc := tg.Client(t)
		name := semName(t)
		e := semaphore.NewExpirable(c, name)
		require.True(t, redistest.Must[bool](t)(e.TrySetPermits(ctx, 2)))

		id := redistest.Must[[]semaphore.PermitID](t)(e.Acquire(ctx, 1, 400*time.Millisecond))[0]
		require.True(t, redistest.Must[bool](t)(e.UpdateLease(ctx, id, 10*time.Second)))
		within(t, redistest.Must[time.Duration](t)(e.LeaseLeft(ctx, id)), 9*time.Second, 10*time.Second, "LeaseLeft")
		within(t, e.Remaining(id), 9*time.Second, 10*time.Second, "Remaining")
		time.Sleep(600 * time.Millisecond)
		_, held := score(t, rc, name, id)
		assert.True(t, held, "extended past its first lease")

		require.True(t, redistest.Must[bool](t)(e.UpdateLease(ctx, id, semaphore.NoExpiry)))
		assert.Equal(t, semaphore.NoExpiry, redistest.Must[time.Duration](t)(e.LeaseLeft(ctx, id)))
		s, _ := score(t, rc, name, id)
		assert.EqualValues(t, never, s)

		at := nowMS()
		require.True(t, redistest.Must[bool](t)(e.UpdateLease(ctx, id, 0)), "to the watchdog")
		s, _ = score(t, rc, name, id)
		assert.InDelta(t, at+30000, s, 1000)
		within(t, e.Remaining(id), 29*time.Second, 30*time.Second, "Remaining")

		for _, bad := range []time.Duration{500 * time.Microsecond, -2 * time.Second} {
			assert.ErrorIs(t, second(e.UpdateLease(ctx, id, bad)), interlock.ErrInvalid, "%v", bad)
		}
		assert.False(t, redistest.Must[bool](t)(e.UpdateLease(ctx, semaphore.PermitID{7}, time.Minute)), "unknown id")
		_, err := e.LeaseLeft(ctx, semaphore.PermitID{7})
		assert.ErrorIs(t, err, semaphore.ErrUnknownPermit)

		// An expired permit cannot be extended: it is reclaimed first.
		old := redistest.Must[[]semaphore.PermitID](t)(e.Acquire(ctx, 1, 100*time.Millisecond))[0]
		time.Sleep(300 * time.Millisecond)
		assert.False(t, redistest.Must[bool](t)(e.UpdateLease(ctx, old, time.Minute)))
		_, held = score(t, rc, name, old)
		assert.False(t, held)
		assert.EqualValues(t, 1, redistest.Must[int64](t)(e.Available(ctx)))
		assert.Zero(t, e.Remaining(old))
		_, err = e.LeaseLeft(ctx, old)
		assert.ErrorIs(t, err, semaphore.ErrUnknownPermit)
		require.NoError(t, e.Release(ctx, id))
	})
}

func TestExpirablePermits(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, rc := tg.Client(t)
		name := semName(t)
		e := semaphore.NewExpirable(c, name)
		in := redistest.Listen(t, rc, keys.SemaphoreChannel(name), tg.Cluster)

		for op, f := range map[string]func(context.Context) (int64, error){"Available": e.Available, "Permits": e.Permits, "Acquired": e.Acquired} {
			assert.EqualValues(t, 0, redistest.Must[int64](t)(f(ctx)), "%s of a missing semaphore", op)
		}
		assert.Zero(t, redistest.Must[time.Duration](t)(e.TTL(ctx)))
		assert.False(t, redistest.Exists(t, rc, name))

		require.NoError(t, e.SetPermits(ctx, 5))
		assert.Equal(t, []string{"5"}, in.Next(t))
		assert.EqualValues(t, 5, redistest.Must[int64](t)(e.Available(ctx)))
		assert.Equal(t, time.Duration(-1), redistest.Must[time.Duration](t)(e.TTL(ctx)))
		ids := redistest.Must[[]semaphore.PermitID](t)(e.Acquire(ctx, 2, time.Minute))
		assert.EqualValues(t, 3, redistest.Must[int64](t)(e.Available(ctx)))
		assert.EqualValues(t, 2, redistest.Must[int64](t)(e.Acquired(ctx)))
		assert.EqualValues(t, 5, redistest.Must[int64](t)(e.Permits(ctx)))
		in.Next(t)

		require.NoError(t, e.SetPermits(ctx, 3), "the total, acquired ones included")
		assert.Equal(t, []string{"3"}, in.Next(t))
		assert.EqualValues(t, 1, redistest.Must[int64](t)(e.Available(ctx)))
		assert.EqualValues(t, 3, redistest.Must[int64](t)(e.Permits(ctx)))
		require.NoError(t, e.SetPermits(ctx, 3))
		assert.Empty(t, in.Next(t), "no change, no message")
		assert.False(t, redistest.Must[bool](t)(e.TrySetPermits(ctx, 10)))
		assert.EqualValues(t, 3, redistest.Must[int64](t)(e.Permits(ctx)))

		redistest.ClearReceipts(t, rc, name)
		require.NoError(t, e.AddPermits(ctx, 2))
		assert.Equal(t, []string{"2"}, in.Next(t), "the delta is announced")
		redistest.OneReceipt(t, rc, name, "AddPermits")
		assert.EqualValues(t, 3, redistest.Must[int64](t)(e.Available(ctx)))
		require.NoError(t, e.AddPermits(ctx, -2))
		assert.Empty(t, in.Next(t), "a negative delta is not announced")
		redistest.OneReceipt(t, rc, name, "AddPermits")
		assert.EqualValues(t, 1, redistest.Must[int64](t)(e.Available(ctx)))
		assert.EqualValues(t, 3, redistest.Must[int64](t)(e.Permits(ctx)))
		assert.ErrorIs(t, e.AddPermits(ctx, 0), interlock.ErrInvalid)
		assert.Empty(t, redistest.Receipts(t, rc, name))

		assert.ErrorIs(t, e.SetPermits(ctx, -1), interlock.ErrInvalid)
		assert.ErrorIs(t, second(e.TrySetPermits(ctx, -1)), interlock.ErrInvalid)

		// Delete removes both keys and ends this Client's holds as lost.
		g := e.Guard(ctx, ids...)
		assert.True(t, redistest.Must[bool](t)(e.Delete(ctx)))
		assert.False(t, redistest.Exists(t, rc, name))
		assert.False(t, redistest.Exists(t, rc, timeoutKey(name)))
		assert.Zero(t, c.Stats().Holds)
		<-g.Done()
		assert.ErrorIs(t, context.Cause(g), semaphore.ErrPermitLost)
		assert.False(t, redistest.Must[bool](t)(e.Delete(ctx)))
		assert.ErrorIs(t, e.Release(ctx, ids[0]), semaphore.ErrUnknownPermit)
		for op, f := range map[string]func(context.Context) (int64, error){"Available": e.Available, "Permits": e.Permits, "Acquired": e.Acquired} {
			assert.EqualValues(t, 0, redistest.Must[int64](t)(f(ctx)), "%s of a deleted semaphore", op)
		}

		// The zset's TTL follows the count's.
		redistest.Do(t, rc, "SET", name, "1", "PX", "60000")
		id := redistest.Must[[]semaphore.PermitID](t)(e.Acquire(ctx, 1, time.Minute))[0]
		ms := redistest.Do(t, rc, "PTTL", timeoutKey(name))
		v, _ := ms.AsInt64()
		assert.InDelta(t, 60000, v, 2000, "the zset took the count's TTL")
		within(t, redistest.Must[time.Duration](t)(e.TTL(ctx)), 55*time.Second, 60*time.Second, "TTL")
		require.NoError(t, e.Release(ctx, id))
	})
}

func TestExpirableGuard(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, _ := tg.Client(t)
		e := semaphore.NewExpirable(c, semName(t))
		require.True(t, redistest.Must[bool](t)(e.TrySetPermits(ctx, 2)))

		g := e.Guard(ctx, semaphore.PermitID{9})
		require.Error(t, g.Err(), "cancelled at once")
		assert.ErrorIs(t, context.Cause(g), semaphore.ErrUnknownPermit)
		var ie *interlock.Error
		if assert.ErrorAs(t, context.Cause(g), &ie) {
			assert.Equal(t, interlock.KindExpirable, ie.Kind)
			assert.Equal(t, interlock.OpGuard, ie.Op)
		}

		ids := redistest.Must[[]semaphore.PermitID](t)(e.Acquire(ctx, 2, time.Minute))
		g = e.Guard(ctx, ids...)
		require.NoError(t, g.Err())
		g1 := e.Guard(ctx, ids[1])
		require.NoError(t, e.Release(ctx, ids[0]))
		require.Error(t, g.Err(), "released")
		assert.ErrorIs(t, context.Cause(g), context.Canceled)
		assert.NoError(t, g1.Err(), "the other permit is still held")
		require.NoError(t, e.Release(ctx, ids[1]))
		assert.Error(t, g1.Err())
	})
}

// Watchdog permits: renewed while held, lost when removed behind the
// Client's back, back one watchdog timeout after their Client closed.
func TestExpirableWatchdog(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out several leases or repolls; the server matrix runs with -short")
	}
	// Renewals every 333ms, each with 667ms to spare for a loaded machine.
	const wd = time.Second
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, rc := tg.Client(t, interlock.WithWatchdogTimeout(wd))
		name := semName(t)
		e := semaphore.NewExpirable(c, name)
		require.True(t, redistest.Must[bool](t)(e.TrySetPermits(ctx, 2)))

		at := nowMS()
		id := redistest.Must[[]semaphore.PermitID](t)(e.Acquire(ctx, 1, 0))[0]
		g := e.Guard(ctx, id)
		first, ok := score(t, rc, name, id)
		require.True(t, ok)
		// A watchdog timeout from when it was set, between at and now,
		// however far apart a loaded machine puts them.
		assert.GreaterOrEqual(t, first, at+wd.Milliseconds())
		assert.LessOrEqual(t, first, nowMS()+wd.Milliseconds())
		last, moves := first, 0
		for end := time.Now().Add(2 * wd); time.Now().Before(end); {
			time.Sleep(50 * time.Millisecond)
			s, ok := score(t, rc, name, id)
			require.True(t, ok, "the permit expired under the watchdog")
			require.Greater(t, s, nowMS(), "the permit's score fell behind the clock")
			if s > last {
				moves++
			}
			last = s
		}
		t.Logf("score moved %d times in %v", moves, 2*wd)
		// Six ticks; half of them, for a loaded machine's late ones.
		assert.GreaterOrEqual(t, moves, 3, "renewed every third of the watchdog timeout")
		require.NoError(t, g.Err())
		assert.Greater(t, redistest.Must[time.Duration](t)(e.LeaseLeft(ctx, id)), time.Duration(0))
		assert.EqualValues(t, 1, redistest.Must[int64](t)(e.Available(ctx)))

		// Removed by someone else: the guard ends with ErrPermitLost at the
		// next renewal.
		start := time.Now()
		redistest.Do(t, rc, "ZREM", timeoutKey(name), string(id[:]))
		select {
		case <-g.Done():
		case <-time.After(wd + redistest.Slack):
			t.Fatal("guard not cancelled")
		}
		t.Logf("loss seen after %v", time.Since(start))
		assert.ErrorIs(t, context.Cause(g), semaphore.ErrPermitLost)
		assert.ErrorIs(t, context.Cause(g), interlock.ErrLockLost)
		assert.Zero(t, c.Stats().Holds)
		assert.Zero(t, e.Remaining(id))
		assert.ErrorIs(t, e.Release(ctx, id), semaphore.ErrUnknownPermit)

		// Closed: the permits come back one watchdog timeout later, seen
		// by another Client's reclaim.
		c2, _ := tg.Client(t, interlock.WithWatchdogTimeout(wd))
		e2 := semaphore.NewExpirable(c2, name)
		_ = redistest.Must[[]semaphore.PermitID](t)(e2.Acquire(ctx, 1, 0))
		time.Sleep(wd) // renewed at least once
		other, _ := tg.Client(t)
		o := semaphore.NewExpirable(other, name)
		assert.EqualValues(t, 0, redistest.Must[int64](t)(o.Available(ctx)), "1 lost to ZREM, 1 held by c2")
		closed := time.Now()
		require.NoError(t, c2.Close())
		require.Eventually(t, func() bool {
			n, err := o.Available(ctx)
			return err == nil && n == 1
		}, wd+redistest.Slack+time.Second, 10*time.Millisecond, "permit not back")
		back := time.Since(closed)
		t.Logf("permit back %v after Close", back)
		assert.LessOrEqual(t, back, wd+redistest.Slack)
	})
}

// Safe mode with no replica to acknowledge: acquisitions fail with
// ErrReplication, and the permits they took come back.
func TestSemaphoresSafeMode(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, rc := tg.Client(t, interlock.WithReplicaAcks(1, 100*time.Millisecond))
		name := semName(t)

		s := semaphore.New(c, name)
		require.True(t, redistest.Must[bool](t)(s.TrySetPermits(ctx, 2)))
		err := s.Acquire(ctx, 1)
		require.ErrorIs(t, err, interlock.ErrReplication)
		assert.Contains(t, err.Error(), "0 of 1 replicas")
		ok, err := s.TryAcquire(ctx, 2, time.Second)
		require.ErrorIs(t, err, interlock.ErrReplication)
		assert.False(t, ok)
		require.Eventually(t, func() bool { return redistest.Must[int64](t)(s.Available(ctx)) == 2 }, redistest.Prompt, 10*time.Millisecond, "permits given back")
		ok, err = s.TryAcquire(ctx, 3, 0)
		require.NoError(t, err, "nothing to acknowledge when nothing was taken")
		assert.False(t, ok)
		require.Eventually(t, func() bool { return c.Stats().UndoQueue == 0 }, redistest.Prompt, 10*time.Millisecond)
		assert.EqualValues(t, 2, redistest.Must[int64](t)(s.Available(ctx)), "given back once")

		pname := name + ":expirable"
		e := semaphore.NewExpirable(c, pname)
		require.True(t, redistest.Must[bool](t)(e.TrySetPermits(ctx, 2)))
		for _, lease := range []time.Duration{time.Minute, 0, semaphore.NoExpiry} {
			ids, err := e.Acquire(ctx, 2, lease)
			require.ErrorIs(t, err, interlock.ErrReplication, "lease %v", lease)
			assert.Nil(t, ids)
			assert.Zero(t, c.Stats().Holds, "no hold kept")
			require.Eventually(t, func() bool { return redistest.Must[int64](t)(e.Available(ctx)) == 2 }, redistest.Prompt, 10*time.Millisecond, "permits given back")
			assert.Empty(t, members(t, rc, pname))
		}
		_, ok, err = e.TryAcquire(ctx, 1, 0, time.Minute)
		require.ErrorIs(t, err, interlock.ErrReplication)
		assert.False(t, ok)
		require.Eventually(t, func() bool { return redistest.Must[int64](t)(e.Available(ctx)) == 2 }, redistest.Prompt, 10*time.Millisecond, "permits given back")
		require.Eventually(t, func() bool { return c.Stats().UndoQueue == 0 }, redistest.Prompt, 10*time.Millisecond)
	})
}

// Extend keeps a leased permit past its first lease: the zset's score,
// Remaining and the Guard's deadline move to the new lease; once that has
// run out, Extend fails with ErrNotHeld and ErrPermitExpired, and takes
// nothing. A watchdog permit is renewed with the watchdog timeout.
func TestExpirableExtend(t *testing.T) {
	const (
		first    = 100 * time.Millisecond
		extended = 400 * time.Millisecond
	)
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, rc := tg.Client(t)
		name := semName(t)
		e := semaphore.NewExpirable(c, name)
		require.True(t, redistest.Must[bool](t)(e.TrySetPermits(ctx, 2)))

		id := redistest.Must[[]semaphore.PermitID](t)(e.Acquire(ctx, 1, first))[0]
		g := e.Guard(ctx, id)
		sent, at := time.Now(), nowMS()
		require.NoError(t, e.Extend(ctx, id, extended))
		s, ok := score(t, rc, name, id)
		require.True(t, ok)
		assert.InDelta(t, at+extended.Milliseconds(), s, float64(time.Since(sent).Milliseconds()+5))
		within(t, e.Remaining(id), extended-time.Since(sent), extended, "Remaining")

		time.Sleep(time.Until(sent.Add(first + 100*time.Millisecond)))
		ok, err := tryTwo(ctx, semaphore.NewExpirable(c, name))
		require.NoError(t, err)
		if time.Since(sent) < extended {
			assert.False(t, ok, "the permit came back within its extended lease")
			assert.NoError(t, g.Err(), "the guard ended at the first lease")
		}
		select {
		case <-g.Done():
		case <-time.After(extended + 2*time.Second):
			t.Fatal("the guard of an extended permit did not end")
		}
		assert.GreaterOrEqual(t, time.Since(sent), extended, "the guard ended before the extended lease")
		assert.ErrorIs(t, context.Cause(g), semaphore.ErrPermitLost)
		err = e.Extend(ctx, id, time.Minute)
		assert.ErrorIs(t, err, interlock.ErrNotHeld)
		assert.ErrorIs(t, err, semaphore.ErrPermitExpired)
		assert.EqualValues(t, 2, redistest.Must[int64](t)(e.Available(ctx)), "an Extend took the permit back")

		err = e.Extend(ctx, semaphore.PermitID{7}, time.Minute)
		assert.ErrorIs(t, err, interlock.ErrNotHeld)
		assert.ErrorIs(t, err, semaphore.ErrUnknownPermit)

		wd := redistest.Must[[]semaphore.PermitID](t)(e.Acquire(ctx, 1, 0))[0]
		at = nowMS()
		require.NoError(t, e.Extend(ctx, wd, 100*time.Millisecond))
		s, _ = score(t, rc, name, wd)
		assert.InDelta(t, at+interlock.DefaultWatchdogTimeout.Milliseconds(), s, 1000, "renewed by the watchdog's lease")
		within(t, e.Remaining(wd), 29*time.Second, 30*time.Second, "Remaining")
		require.NoError(t, e.Release(ctx, wd))
	})
}

// tryTwo tries once for both of a two-permit semaphore's permits.
func tryTwo(ctx context.Context, e *semaphore.Expirable) (bool, error) {
	ids, ok, err := e.TryAcquire(ctx, 2, 0, time.Minute)
	if ok {
		return true, e.Release(ctx, ids...)
	}
	return false, err
}

func TestExpirableBadInput(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, rc := tg.Client(t)
		name := semName(t)
		e := semaphore.NewExpirable(c, name)
		id := semaphore.PermitID{1}

		invalid := map[string]error{
			"TrySetPermits(-1)":         second(e.TrySetPermits(ctx, -1)),
			"SetPermits(-1)":            e.SetPermits(ctx, -1),
			"Acquire(0)":                second(e.Acquire(ctx, 0, time.Minute)),
			"Acquire(-1)":               second(e.Acquire(ctx, -1, 0)),
			"Acquire(1, 500us)":         second(e.Acquire(ctx, 1, 500*time.Microsecond)),
			"Acquire(1, -2s)":           second(e.Acquire(ctx, 1, -2*time.Second)),
			"TryAcquire(0)":             third(e.TryAcquire(ctx, 0, 0, time.Minute)),
			"TryAcquire(1, -1ns)":       third(e.TryAcquire(ctx, 1, -1, time.Minute)),
			"TryAcquire(1, 0, -5ms)":    third(e.TryAcquire(ctx, 1, 0, -5*time.Millisecond)),
			"UpdateLease(id, 1us)":      second(e.UpdateLease(ctx, id, time.Microsecond)),
			"Extend(id, 0)":             e.Extend(ctx, id, 0),
			"Extend(id, NoExpiry)":      e.Extend(ctx, id, semaphore.NoExpiry),
			"Extend(id, 500us)":         e.Extend(ctx, id, 500*time.Microsecond),
			"Release()":                 e.Release(ctx),
			"Release(id, id)":           e.Release(ctx, id, id),
			"TryRelease(id, 2, id)":     second(e.TryRelease(ctx, id, semaphore.PermitID{2}, id)),
			"ParsePermitID(short)":      second(semaphore.ParsePermitID("abc")),
			"ParsePermitID(not hex)":    second(semaphore.ParsePermitID("zz000000000000000000000000000000")),
			"ParsePermitID(33 chars)":   second(semaphore.ParsePermitID("000000000000000000000000000000000")),
			"ParsePermitID(hex prefix)": second(semaphore.ParsePermitID("0x000000000000000000000000000000")),
		}
		for op, err := range invalid {
			assert.ErrorIs(t, err, interlock.ErrInvalid, op)
			var ie *interlock.Error
			assert.ErrorAs(t, err, &ie, op)
		}
		upper, err := semaphore.ParsePermitID("00112233445566778899AABBCCDDEEFF")
		require.NoError(t, err)
		assert.Equal(t, "00112233445566778899aabbccddeeff", upper.String())
		assert.False(t, redistest.Exists(t, rc, name), "nothing sent")

		for what, e := range map[string]*semaphore.Expirable{
			"nil client": semaphore.NewExpirable(nil, name),
			"empty name": semaphore.NewExpirable(c, ""),
			"a{b":        semaphore.NewExpirable(c, "a{b"),
		} {
			for _, o := range allExpirableOps(ctx, e) {
				err := o.f()
				assert.ErrorIs(t, err, interlock.ErrInvalid, "%s: %s", what, o.name)
				var ie *interlock.Error
				if assert.ErrorAs(t, err, &ie, "%s: %s", what, o.name) {
					assert.Equal(t, interlock.KindExpirable, ie.Kind, "%s: %s", what, o.name)
				}
			}
			assert.Zero(t, e.Remaining(id), what)
		}

		// The count's key holds a hash (an rlock's), or the zset's key a
		// string: every method that reads either key, or finds nothing to
		// act on, fails, naming the key and changing nothing.
		cases := []struct {
			what, name, key string
			setup           [][]string
			skip            []string // methods that do not read the key
		}{
			{"hash count", name + ":hash", name + ":hash", [][]string{{"HSET", name + ":hash", "client:1", "1"}}, nil},
			{"string zset", name + ":str", timeoutKey(name + ":str"), [][]string{{"SET", name + ":str", "1"}, {"SET", timeoutKey(name + ":str"), "x"}},
				[]string{"AddPermits"}},
		}
		for _, tc := range cases {
			for _, cmd := range tc.setup {
				redistest.Do(t, rc, cmd...)
			}
			before := state(t, rc, tc.key)
			for _, o := range allExpirableOps(ctx, semaphore.NewExpirable(c, tc.name)) {
				if slices.Contains(append(tc.skip, "Delete", "TTL", "Guard"), o.name) {
					continue
				}
				err := o.f()
				require.Error(t, err, "%s: %s", tc.what, o.name)
				assert.ErrorIs(t, err, interlock.ErrInvalid, "%s: %s", tc.what, o.name)
				assert.Contains(t, err.Error(), tc.key+" holds another type of data", "%s: %s", tc.what, o.name)
				assert.Equal(t, before, state(t, rc, tc.key), "%s: %s changed the key", tc.what, o.name)
			}
			assert.Zero(t, c.Stats().Holds, tc.what)
		}

		c2, _ := tg.Client(t)
		e2 := semaphore.NewExpirable(c2, name)
		require.NoError(t, c2.Close())
		for _, o := range allExpirableOps(ctx, e2) {
			if o.name != "Guard" {
				assert.ErrorIs(t, o.f(), interlock.ErrClosed, o.name)
			}
		}
		assert.False(t, redistest.Exists(t, rc, name))
	})
}

func third[A, B any](_ A, _ B, err error) error { return err }

func allExpirableOps(ctx context.Context, e *semaphore.Expirable) []op {
	id := semaphore.PermitID{3}
	return []op{
		{"TrySetPermits", func() error { return second(e.TrySetPermits(ctx, 1)) }},
		{"SetPermits", func() error { return e.SetPermits(ctx, 1) }},
		{"AddPermits", func() error { return e.AddPermits(ctx, 1) }},
		{"Acquire", func() error { return second(e.Acquire(ctx, 1, time.Minute)) }},
		{"TryAcquire", func() error { return third(e.TryAcquire(ctx, 1, 100*time.Millisecond, time.Minute)) }},
		{"Release", func() error { return e.Release(ctx, id) }},
		{"TryRelease", func() error { return second(e.TryRelease(ctx, id)) }},
		{"UpdateLease", func() error { return second(e.UpdateLease(ctx, id, time.Minute)) }},
		{"Extend", func() error { return e.Extend(ctx, id, time.Minute) }},
		{"LeaseLeft", func() error { return second(e.LeaseLeft(ctx, id)) }},
		{"Available", func() error { return second(e.Available(ctx)) }},
		{"Permits", func() error { return second(e.Permits(ctx)) }},
		{"Acquired", func() error { return second(e.Acquired(ctx)) }},
		{"TTL", func() error { return second(e.TTL(ctx)) }},
		{"Delete", func() error { return second(e.Delete(ctx)) }},
		{"Guard", func() error { return context.Cause(e.Guard(ctx, id)) }},
	}
}

// UpdateLease moves a permit into and out of the watchdog's care.
func TestExpirableUpdateLeaseWatchdog(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out several leases or repolls; the server matrix runs with -short")
	}
	// Renewals every 333ms, each with 667ms to spare for a loaded machine.
	const wd = time.Second
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, rc := tg.Client(t, interlock.WithWatchdogTimeout(wd))
		name := semName(t)
		e := semaphore.NewExpirable(c, name)
		require.True(t, redistest.Must[bool](t)(e.TrySetPermits(ctx, 3)))

		toNever := redistest.Must[[]semaphore.PermitID](t)(e.Acquire(ctx, 1, 0))[0]
		toLease := redistest.Must[[]semaphore.PermitID](t)(e.Acquire(ctx, 1, 0))[0]
		toWatchdog := redistest.Must[[]semaphore.PermitID](t)(e.Acquire(ctx, 1, 10*time.Second))[0]
		require.True(t, redistest.Must[bool](t)(e.UpdateLease(ctx, toNever, semaphore.NoExpiry)))
		require.True(t, redistest.Must[bool](t)(e.UpdateLease(ctx, toLease, 5*time.Second)))
		require.True(t, redistest.Must[bool](t)(e.UpdateLease(ctx, toWatchdog, 0)))
		leased, _ := score(t, rc, name, toLease)
		g := e.Guard(ctx, toNever, toLease, toWatchdog)

		time.Sleep(2 * wd)
		s, ok := score(t, rc, name, toNever)
		require.True(t, ok)
		assert.EqualValues(t, never, s, "the watchdog no longer renews a permit that never expires")
		assert.Equal(t, semaphore.NoExpiry, redistest.Must[time.Duration](t)(e.LeaseLeft(ctx, toNever)))
		s, ok = score(t, rc, name, toLease)
		require.True(t, ok)
		assert.Equal(t, leased, s, "the watchdog no longer renews a leased permit")
		s, ok = score(t, rc, name, toWatchdog)
		require.True(t, ok, "renewed by the watchdog")
		assert.Greater(t, s, nowMS())
		assert.Less(t, s, nowMS()+wd.Milliseconds()+100, "a watchdog lease")
		assert.NoError(t, g.Err())
		require.NoError(t, e.Release(ctx, toNever, toLease, toWatchdog))
	})
}

// A permit this Client acquired whose lease ran out is ErrPermitExpired on
// release (and LeaseLeft) whether or not another client reclaimed it
// first, and whether or not this Client's watchdog tick has seen the
// lease end; released once, it is unknown.
func TestExpirableReleaseExpiredReclaimed(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		for _, tc := range []struct {
			name string
			wd   time.Duration // the watchdog timeout: its tick forgets a lease that ran out
		}{{"counted", 30 * time.Second}, {"forgotten", 300 * time.Millisecond}} {
			t.Run(tc.name, func(t *testing.T) {
				ctx := redistest.Context(t)
				c, _ := tg.Client(t, interlock.WithWatchdogTimeout(tc.wd))
				other, _ := tg.Client(t)
				name := semName(t)
				e, o := semaphore.NewExpirable(c, name), semaphore.NewExpirable(other, name)
				require.True(t, redistest.Must[bool](t)(e.TrySetPermits(ctx, 3)))

				leased := redistest.Must[[]semaphore.PermitID](t)(e.Acquire(ctx, 2, 100*time.Millisecond))
				live := redistest.Must[[]semaphore.PermitID](t)(e.Acquire(ctx, 1, time.Minute))[0]
				time.Sleep(500 * time.Millisecond)
				assert.EqualValues(t, 2, redistest.Must[int64](t)(o.Available(ctx)), "the other client reclaimed both")

				err := e.Release(ctx, leased[0])
				require.ErrorIs(t, err, semaphore.ErrPermitExpired)
				assert.NotErrorIs(t, err, semaphore.ErrUnknownPermit)
				assert.ErrorIs(t, e.Release(ctx, leased[0]), semaphore.ErrUnknownPermit, "released once: unknown")

				_, err = e.LeaseLeft(ctx, leased[1])
				assert.ErrorIs(t, err, semaphore.ErrPermitExpired)
				err = e.Release(ctx, live, leased[1])
				require.ErrorIs(t, err, semaphore.ErrPermitExpired, "in a list too")
				assert.Contains(t, err.Error(), leased[1].String())
				assert.True(t, redistest.Must[bool](t)(e.TryRelease(ctx, live)))
				assert.EqualValues(t, 3, redistest.Must[int64](t)(o.Available(ctx)))

				// Another Client's permit, expired and reclaimed: nothing
				// says it was ever acquired.
				theirs := redistest.Must[[]semaphore.PermitID](t)(o.Acquire(ctx, 1, 100*time.Millisecond))[0]
				time.Sleep(300 * time.Millisecond)
				assert.EqualValues(t, 3, redistest.Must[int64](t)(o.Available(ctx)))
				assert.ErrorIs(t, e.Release(ctx, theirs), semaphore.ErrUnknownPermit)
			})
		}
	})
}
