package ratelimit_test

import (
	"context"
	"errors"
	"strconv"
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
	"github.com/interlock-go/interlock/ratelimit"
)

func TestRateLimitSetAndConfig(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, rc := tg.Client(t)
		name := rlName(t)
		l := ratelimit.New(c, name)
		assert.Equal(t, name, l.Name())

		_, err := l.Config(ctx)
		require.ErrorIs(t, err, ratelimit.ErrNotSet)
		_, err = l.TryAcquire(ctx, 1, 0)
		require.ErrorIs(t, err, ratelimit.ErrNotSet)
		_, err = l.AvailablePermits(ctx)
		require.ErrorIs(t, err, ratelimit.ErrNotSet)

		cfg := ratelimit.Config{Type: ratelimit.Overall, Rate: 5, Interval: 2 * time.Second}
		require.True(t, redistest.Must[bool](t)(l.TrySetRate(ctx, cfg)))
		require.False(t, redistest.Must[bool](t)(l.TrySetRate(ctx, ratelimit.Config{Rate: 9, Interval: time.Second})))
		assert.Equal(t, cfg, redistest.Must[ratelimit.Config](t)(l.Config(ctx)))
		got, err := rc.Do(ctx, rc.B().Hgetall().Key(name).Build()).AsStrMap()
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"rate": "5", "interval": "2000", "type": "0", "keepAliveTime": "0"}, got)
		assert.EqualValues(t, -1, redistest.Must[int64](t)(rc.Do(ctx, rc.B().Pttl().Key(name).Build()).AsInt64()))

		cfg2 := ratelimit.Config{Type: ratelimit.PerClient, Rate: 3, Interval: time.Second, KeepAlive: time.Minute}
		require.NoError(t, l.SetRate(ctx, cfg2))
		assert.Equal(t, cfg2, redistest.Must[ratelimit.Config](t)(l.Config(ctx)))
		ttl := redistest.Must[int64](t)(rc.Do(ctx, rc.B().Pttl().Key(name).Build()).AsInt64())
		assert.InDelta(t, 60000, ttl, 2000, "keep-alive sets the config's TTL")

		require.True(t, redistest.Must[bool](t)(l.Delete(ctx)))
		require.False(t, redistest.Must[bool](t)(l.Delete(ctx)))
		_, err = l.Config(ctx)
		require.ErrorIs(t, err, ratelimit.ErrNotSet)
	})
}

func TestRateLimitBadInput(t *testing.T) {
	ctx := redistest.Context(t)
	c, _ := newClient(t)
	l := ratelimit.New(c, rlName(t))
	for _, cfg := range []ratelimit.Config{
		{Rate: 0, Interval: time.Second},
		{Rate: 1, Interval: time.Millisecond - 1},
		{Rate: 1, Interval: time.Second, KeepAlive: time.Second - time.Millisecond},
		{Rate: 1, Interval: time.Second, KeepAlive: -1},
		{Type: 2, Rate: 1, Interval: time.Second},
	} {
		_, err := l.TrySetRate(ctx, cfg)
		assert.ErrorIs(t, err, interlock.ErrInvalid, "%+v", cfg)
		assert.ErrorIs(t, l.SetRate(ctx, cfg), interlock.ErrInvalid, "%+v", cfg)
	}
	_, err := l.TryAcquire(ctx, 0, 0)
	assert.ErrorIs(t, err, interlock.ErrInvalid)
	_, err = l.TryAcquire(ctx, 1, -1)
	assert.ErrorIs(t, err, interlock.ErrInvalid)
	assert.ErrorIs(t, l.Acquire(ctx, -1), interlock.ErrInvalid)
	_, err = ratelimit.New(c, "").Config(ctx)
	assert.ErrorIs(t, err, interlock.ErrInvalid)
	_, err = ratelimit.New(nil, "x").TryAcquire(ctx, 1, 0)
	assert.ErrorIs(t, err, interlock.ErrInvalid)

	// n above the rate: refused by the server before anything changes.
	require.True(t, redistest.Must[bool](t)(l.TrySetRate(ctx, ratelimit.Config{Rate: 2, Interval: time.Second})))
	_, err = l.TryAcquire(ctx, 3, 0)
	assert.ErrorIs(t, err, interlock.ErrInvalid)
	assert.EqualValues(t, 2, redistest.Must[int64](t)(l.AvailablePermits(ctx)))
}

func TestRateLimitWindow(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, rc := tg.Client(t)
		name := rlName(t)
		l := ratelimit.New(c, name)
		require.True(t, redistest.Must[bool](t)(l.TrySetRate(ctx, ratelimit.Config{Rate: 3, Interval: 500 * time.Millisecond})))
		assert.EqualValues(t, 3, redistest.Must[int64](t)(l.AvailablePermits(ctx)))
		require.True(t, redistest.Must[bool](t)(l.TryAcquire(ctx, 2, 0)))
		require.True(t, redistest.Must[bool](t)(l.TryAcquire(ctx, 1, 0)))
		require.False(t, redistest.Must[bool](t)(l.TryAcquire(ctx, 1, 0)))
		require.False(t, redistest.Must[bool](t)(l.TryAcquire(ctx, 1, 100*time.Millisecond)), "the permits come later than the wait")
		assert.EqualValues(t, 0, redistest.Must[int64](t)(l.AvailablePermits(ctx)))
		assert.EqualValues(t, 0, redistest.Must[int64](t)(rc.Do(ctx, rc.B().Get().Key(keys.Suffix(name, "value")).Build()).AsInt64()))
		assert.EqualValues(t, 2, redistest.Must[int64](t)(rc.Do(ctx, rc.B().Zcard().Key(keys.Suffix(name, "permits")).Build()).AsInt64()))

		start := time.Now()
		require.True(t, redistest.Must[bool](t)(l.TryAcquire(ctx, 2, 2*time.Second)))
		waited := time.Since(start)
		assert.Greater(t, waited, 300*time.Millisecond)
		assert.Less(t, waited, 1500*time.Millisecond)

		start = time.Now()
		require.NoError(t, l.Acquire(ctx, 3))
		assert.Less(t, time.Since(start), 1500*time.Millisecond)
		assert.LessOrEqual(t, len(redistest.Receipts(t, rc, name)), 1, "answered receipts go with the next call's batch")
	})
}

func TestRateLimitAcquireCancel(t *testing.T) {
	ctx := redistest.Context(t)
	c, _ := newClient(t)
	l := ratelimit.New(c, rlName(t))
	require.True(t, redistest.Must[bool](t)(l.TrySetRate(ctx, ratelimit.Config{Rate: 1, Interval: time.Hour})))
	require.NoError(t, l.Acquire(ctx, 1))
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := l.Acquire(cctx, 1)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), time.Second, "the hour's wait ends with the context")
}

func TestRateLimitPerClient(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c1, rc := tg.Client(t)
		c2, _ := tg.Client(t)
		name := rlName(t)
		l1, l2 := ratelimit.New(c1, name), ratelimit.New(c2, name)
		require.True(t, redistest.Must[bool](t)(l1.TrySetRate(ctx, ratelimit.Config{Type: ratelimit.PerClient, Rate: 2, Interval: time.Hour})))
		for _, l := range []*ratelimit.Limiter{l1, l2} {
			require.True(t, redistest.Must[bool](t)(l.TryAcquire(ctx, 2, 0)), "each client has its own rate")
			require.False(t, redistest.Must[bool](t)(l.TryAcquire(ctx, 1, 0)))
		}
		for _, c := range []*interlock.Client{c1, c2} {
			assert.True(t, redistest.Exists(t, rc, keys.Suffix(name, "value:"+c.ID())))
			assert.True(t, redistest.Exists(t, rc, keys.Suffix(name, "permits:"+c.ID())))
		}
		assert.False(t, redistest.Exists(t, rc, keys.Suffix(name, "value")))
	})
}

func TestRateLimitConcurrent(t *testing.T) {
	ctx := redistest.Context(t)
	c, rc := newClient(t)
	name := rlName(t)
	l := ratelimit.New(c, name)
	require.True(t, redistest.Must[bool](t)(l.TrySetRate(ctx, ratelimit.Config{Rate: 20, Interval: 300 * time.Millisecond})))
	var got atomic.Int64
	var wg sync.WaitGroup
	end := time.Now().Add(time.Second)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				ok, err := l.TryAcquire(ctx, 1, time.Until(end))
				if err != nil && !errors.Is(err, context.DeadlineExceeded) {
					t.Error(err)
					return
				}
				if ok {
					got.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	// 1s is 3.33 windows of 300ms: at most 4 windows' worth, and more than 2.
	assert.LessOrEqual(t, got.Load(), int64(80))
	assert.Greater(t, got.Load(), int64(40))
	_ = rc
}

func TestRateLimitGarbledConfig(t *testing.T) {
	ctx := redistest.Context(t)
	c, rc := newClient(t)
	name := rlName(t)
	require.NoError(t, rc.Do(ctx, rc.B().Hset().Key(name).FieldValue().FieldValue("rate", "x").FieldValue("interval", "1000").FieldValue("type", "0").Build()).Error())
	l := ratelimit.New(c, name)
	_, err := l.Config(ctx)
	assert.ErrorIs(t, err, interlock.ErrInvalid)
	_, err = l.TryAcquire(ctx, 1, 0)
	assert.ErrorIs(t, err, interlock.ErrInvalid)
	_, err = l.AvailablePermits(ctx)
	assert.ErrorIs(t, err, interlock.ErrInvalid)

	other := rlName(t) + ":str"
	require.NoError(t, rc.Do(ctx, rc.B().Set().Key(other).Value("1").Build()).Error())
	_, err = ratelimit.New(c, other).TryAcquire(ctx, 1, 0)
	assert.ErrorIs(t, err, interlock.ErrInvalid)
	_, err = ratelimit.New(c, other).Config(ctx)
	assert.ErrorIs(t, err, interlock.ErrInvalid)
}

// TestRateLimitReceipts runs the acquire and undo scripts by hand, as a
// resend and the Client's take-back of a lost reply send them.
func TestRateLimitReceipts(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, rc := tg.Client(t)
		name := rlName(t)
		l := ratelimit.New(c, name)
		require.True(t, redistest.Must[bool](t)(l.TrySetRate(ctx, ratelimit.Config{Rate: 5, Interval: time.Hour})))
		ks := append(keys.RateLimiter(name, c.ID()), keys.Receipt(name, "0123456789abcdef0123456789abcdef"))
		rnd := "0123456789abcdef"
		now := strconv.FormatInt(time.Now().UnixMilli(), 10)
		run := func(s *script.Script, args ...string) rueidis.RedisResult {
			return s.Exec(ctx, rc, ks, args)
		}
		free := func() int64 { return redistest.Must[int64](t)(l.AvailablePermits(ctx)) }

		for range 3 { // the first send and two resends: one grant
			r := run(script.RLAcquire(), "2", now, rnd, "30000")
			require.True(t, rueidis.IsRedisNil(r.Error()), "granted: %v", r.Error())
		}
		assert.EqualValues(t, 3, free(), "a resend takes nothing")
		assert.EqualValues(t, 1, redistest.Must[int64](t)(rc.Do(ctx, rc.B().Zcard().Key(ks[3]).Build()).AsInt64()))

		for range 2 { // the take-back, resent
			n, err := run(script.RLUndoAcquire(), "2", rnd, "30000").AsInt64()
			require.NoError(t, err)
			_ = n
		}
		assert.EqualValues(t, 5, free(), "taken back once")
		assert.EqualValues(t, 0, redistest.Must[int64](t)(rc.Do(ctx, rc.B().Zcard().Key(ks[3]).Build()).AsInt64()))
		n, err := run(script.RLAcquire(), "2", now, rnd, "30000").AsInt64()
		require.NoError(t, err, "a copy that arrives after the take-back")
		assert.EqualValues(t, 0, n)
		assert.EqualValues(t, 5, free(), "takes nothing")

		// A take-back that comes first makes the late acquisition a no-op.
		ks[5] = keys.Receipt(name, "fedcba9876543210fedcba9876543210")
		n, err = run(script.RLUndoAcquire(), "1", rnd, "30000").AsInt64()
		require.NoError(t, err)
		assert.EqualValues(t, 0, n)
		n, err = run(script.RLAcquire(), "1", now, rnd, "30000").AsInt64()
		require.NoError(t, err)
		assert.EqualValues(t, 0, n)
		assert.EqualValues(t, 5, free())
	})
}

// observed collects an Observer's events.
type observed struct {
	mu     sync.Mutex
	events []interlock.Event
}

func (o *observed) Observe(_ context.Context, e interlock.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, e)
}

func TestRateLimitObserver(t *testing.T) {
	ctx := redistest.Context(t)
	var obs observed
	c, _ := newClient(t, interlock.WithObserver(&obs))
	l := ratelimit.New(c, rlName(t))
	require.True(t, redistest.Must[bool](t)(l.TrySetRate(ctx, ratelimit.Config{Rate: 1, Interval: time.Hour})))
	require.True(t, redistest.Must[bool](t)(l.TryAcquire(ctx, 1, 0)))
	require.False(t, redistest.Must[bool](t)(l.TryAcquire(ctx, 1, 0)))
	obs.mu.Lock()
	defer obs.mu.Unlock()
	require.Len(t, obs.events, 2)
	for i, want := range []string{interlock.OutcomeAcquired, interlock.OutcomeBusy} {
		e := obs.events[i]
		assert.Equal(t, interlock.KindRateLimiter, e.Kind)
		assert.Equal(t, interlock.OpAcquire, e.Op)
		assert.Equal(t, want, e.Outcome)
		assert.Equal(t, 1, e.Permits)
	}
}
