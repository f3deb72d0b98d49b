package compat_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/fenced"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/latch"
	"github.com/interlock-go/interlock/nonreentrant"
	"github.com/interlock-go/interlock/ratelimit"
	"github.com/interlock-go/interlock/rlock"
	"github.com/interlock-go/interlock/rwlock"
	"github.com/interlock-go/interlock/semaphore"
	"github.com/interlock-go/interlock/spin"
)

// TestInteropLsListsJavaAndGo runs the interlock CLI's ls on one server
// that holds a synchronizer of every kind written by a Redisson 4.7.0 JVM,
// the same written by interlock (rate limiters, overall and per client,
// included), and a zombie made by hand (a lock hash
// with no TTL): each is listed with its kind, and only the zombie is
// flagged.
func TestInteropLsListsJavaAndGo(t *testing.T) {
	parallel(t)
	bin := interlockCLI(t)

	base := unique("ls-interop")
	n := func(side, kind string) string { return base + ":" + side + ":" + kind }
	p := startJavaPeer(t, "4.7.0", []string{standaloneAddr})
	rc := redistest.NewClient(t, standaloneAddr)
	c := newLockClient(t, rc)
	ctx := interlock.WithOwner(testCtx(t, time.Minute), 1)
	bg := interlock.WithOwner(context.Background(), 1) // for cleanups

	// Java. Each kind on a thread of its own; a fair waiter, a semaphore
	// waiter and a latch awaiter block until the end.
	java := func(r peerReq) {
		t.Helper()
		reply := p.Do(t, r)
		require.True(t, reply.OK, "%s %s: %s", r.Kind, r.Op, reply.Err)
	}
	lockKinds := []string{"reentrant", "fair", "read", "write", "fenced", "spin", "nonReentrant", "nonReentrantFair"}
	for i, kind := range lockKinds {
		java(peerReq{Thread: i + 1, Op: "lock", Kind: kind, Name: n("java", kind)})
	}
	fairWaiter := p.Start(t, peerReq{Thread: 20, Op: "lock", Kind: "fair", Name: n("java", "fair")})
	semWaiter := p.Start(t, peerReq{Thread: 21, Op: "tryAcquire", Kind: "semaphore", Name: n("java", "semaphore"), Permits: 1, Wait: time.Minute})
	java(peerReq{Thread: 10, Op: "trySetPermits", Kind: "expirable", Name: n("java", "expirable"), Permits: 2})
	java(peerReq{Thread: 10, Op: "acquire", Kind: "expirable", Name: n("java", "expirable"), Permits: 1, Lease: time.Minute})
	java(peerReq{Thread: 11, Op: "trySetCount", Kind: "latch", Name: n("java", "latch"), Count: 1})
	latchWaiter := p.Start(t, peerReq{Thread: 22, Op: "await", Kind: "latch", Name: n("java", "latch"), Wait: time.Minute})
	// Rate limiters, overall and per client, with 2 of 5 permits taken; a
	// keep-alive makes them go by themselves.
	for kind, typ := range map[string]string{"ratelimit": "OVERALL", "ratelimitPC": "PER_CLIENT"} {
		java(rlReq("trySetRate", n("java", kind), peerRateArgs{RateType: typ, Rate: 5, IntervalMs: 60000, KeepAliveMs: 120000}))
		java(peerReq{Thread: 1, Op: "acquire", Kind: "ratelimit", Name: n("java", kind), Permits: 2})
	}

	// Go, the same kinds.
	rl := rlock.New(c, n("go", "reentrant"))
	require.NoError(t, rl.Lock(ctx))
	t.Cleanup(func() { _ = rl.Unlock(bg) })
	fl := fairlock.New(c, n("go", "fair"), fairlock.WithWaitTimeout(time.Minute))
	require.NoError(t, fl.Lock(ctx))
	t.Cleanup(func() { _ = fl.Unlock(bg) })
	wctx, cancel := context.WithCancel(ctx)
	goWaiters := make(chan error, 3)
	go func() { goWaiters <- fl.Lock(interlock.WithOwner(wctx, 2)) }()
	rw := rwlock.New(c, n("go", "read"))
	require.NoError(t, rw.Read().Lock(ctx))
	t.Cleanup(func() { _ = rw.Read().Unlock(bg) })
	ww := rwlock.New(c, n("go", "write"))
	require.NoError(t, ww.Write().Lock(ctx))
	t.Cleanup(func() { _ = ww.Write().Unlock(bg) })
	fm := fenced.New(c, n("go", "fenced"))
	require.NoError(t, fm.Lock(ctx))
	t.Cleanup(func() { _ = fm.Unlock(bg) })
	sp := spin.New(c, n("go", "spin"))
	require.NoError(t, sp.Lock(ctx))
	t.Cleanup(func() { _ = sp.Unlock(bg) })
	nr := nonreentrant.New(c, n("go", "nonReentrant"))
	require.NoError(t, nr.Lock(ctx))
	t.Cleanup(func() { _ = nr.Unlock(bg) })
	nrf := nonreentrant.NewFair(c, n("go", "nonReentrantFair"), nonreentrant.WithWaitTimeout(time.Minute))
	require.NoError(t, nrf.Lock(ctx))
	t.Cleanup(func() { _ = nrf.Unlock(bg) })
	sem := semaphore.New(c, n("go", "semaphore"))
	go func() { goWaiters <- sem.Acquire(wctx, 1) }()
	pes := semaphore.NewExpirable(c, n("go", "expirable"))
	_, err := pes.TrySetPermits(ctx, 2)
	require.NoError(t, err)
	ids, err := pes.Acquire(ctx, 1, time.Minute)
	require.NoError(t, err)
	t.Cleanup(func() { _ = pes.Release(bg, ids...) })
	for kind, typ := range map[string]ratelimit.RateType{"ratelimit": ratelimit.Overall, "ratelimitPC": ratelimit.PerClient} {
		l := ratelimit.New(c, n("go", kind))
		_, err := l.TrySetRate(ctx, ratelimit.Config{Type: typ, Rate: 5, Interval: time.Minute, KeepAlive: 2 * time.Minute})
		require.NoError(t, err)
		require.NoError(t, l.Acquire(ctx, 2))
	}
	lat := latch.New(c, n("go", "latch"))
	_, err = lat.TrySetCount(ctx, 1)
	require.NoError(t, err)
	go func() { goWaiters <- lat.Await(wctx) }()
	t.Cleanup(func() {
		cancel()
		for range 3 {
			<-goWaiters
		}
	})

	// By hand: a Java-shaped hold with no TTL.
	zombie := base + ":zombie"
	require.NoError(t, rc.Do(ctx, rc.B().Hset().Key(zombie).FieldValue().FieldValue(p.ClientID()+":1", "1").Build()).Error())

	// Everyone waiting is queued or subscribed before ls looks.
	require.Eventually(t, func() bool {
		for _, side := range []string{"java", "go"} {
			q, err := rc.Do(ctx, rc.B().Llen().Key(keys.Prefix("redisson_lock_queue", n(side, "fair"))).Build()).AsInt64()
			if err != nil || q != 1 {
				return false
			}
			for _, ch := range []string{keys.SemaphoreChannel(n(side, "semaphore")), keys.LatchChannel(n(side, "latch"))} {
				m, err := rc.Do(ctx, rc.B().PubsubNumsub().Channel(ch).Build()).AsIntMap()
				if err != nil || m[ch] == 0 {
					return false
				}
			}
		}
		return true
	}, 20*time.Second, 20*time.Millisecond, "the waiters did not queue or subscribe")

	out, err := exec.Command(bin, "ls", "--json", "--redis", "redis://"+standaloneAddr, base+"*").Output()
	require.NoError(t, err, "ls")
	var got struct {
		Synchronizers []struct {
			Name        string   `json:"name"`
			Kind        string   `json:"kind"`
			Mode        string   `json:"mode"`
			Locked      bool     `json:"locked"`
			TTLms       int64    `json:"ttl_ms"`
			Alike       []string `json:"alike"`
			Subscribers int64    `json:"subscribers"`
			Flags       []string `json:"flags"`
			Holders     []struct {
				ClientID string `json:"client_id"`
			} `json:"holders"`
			Queue       []json.RawMessage `json:"queue"`
			Acquired    []json.RawMessage `json:"acquired"`
			RateLimiter *struct {
				Type    string `json:"type"`
				Rate    int64  `json:"rate"`
				Overall *struct {
					Free  int64 `json:"free_permits"`
					Taken int64 `json:"taken"`
				} `json:"overall"`
				Clients []struct {
					ClientID string `json:"client_id"`
					Free     int64  `json:"free_permits"`
					Taken    int64  `json:"taken"`
				} `json:"clients"`
			} `json:"rate_limiter"`
		} `json:"synchronizers"`
	}
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	want := map[string][2]string{ // kind -> the kind ls shows, and the mode
		"reentrant": {"reentrant"}, "fair": {"fair"}, "read": {"read/write", "read"},
		"write": {"read/write", "write"}, "fenced": {"fenced"}, "spin": {"reentrant"},
		"nonReentrant": {"reentrant"}, "nonReentrantFair": {"reentrant"}, "semaphore": {"semaphore"}, "expirable": {"expirable-semaphore"},
		"latch": {"latch"}, "ratelimit": {"ratelimit"}, "ratelimitPC": {"ratelimit"},
	}
	listed := map[string]bool{}
	for _, e := range got.Synchronizers {
		listed[e.Name] = true
		if e.Name == zombie {
			assert.Equal(t, "reentrant", e.Kind)
			assert.Equal(t, []string{"zombie"}, e.Flags)
			assert.Equal(t, int64(-1), e.TTLms)
			continue
		}
		assert.Empty(t, e.Flags, e.Name)
		for kind, w := range want {
			for side, client := range map[string]string{"java": p.ClientID(), "go": c.ID()} {
				if e.Name != n(side, kind) {
					continue
				}
				assert.Equal(t, w[0], e.Kind, e.Name)
				assert.Equal(t, w[1], e.Mode, e.Name)
				switch kind {
				case "semaphore", "latch":
					assert.Positive(t, e.Subscribers, "%s: its waiter", e.Name)
				case "expirable":
					assert.Len(t, e.Acquired, 1, e.Name)
				case "ratelimit":
					require.NotNil(t, e.RateLimiter, e.Name)
					assert.Equal(t, "OVERALL", e.RateLimiter.Type, e.Name)
					assert.EqualValues(t, 5, e.RateLimiter.Rate, e.Name)
					require.NotNil(t, e.RateLimiter.Overall, e.Name)
					assert.EqualValues(t, 3, e.RateLimiter.Overall.Free, e.Name)
					assert.EqualValues(t, 2, e.RateLimiter.Overall.Taken, e.Name)
				case "ratelimitPC":
					require.NotNil(t, e.RateLimiter, e.Name)
					assert.Equal(t, "PER_CLIENT", e.RateLimiter.Type, e.Name)
					require.Len(t, e.RateLimiter.Clients, 1, "%s: its client's keys belong to it", e.Name)
					assert.Equal(t, client, e.RateLimiter.Clients[0].ClientID, e.Name)
					assert.EqualValues(t, 3, e.RateLimiter.Clients[0].Free, e.Name)
					assert.EqualValues(t, 2, e.RateLimiter.Clients[0].Taken, e.Name)
				default:
					require.Len(t, e.Holders, 1, e.Name)
					assert.Equal(t, client, e.Holders[0].ClientID, e.Name)
				}
				if kind == "fair" {
					assert.Len(t, e.Queue, 1, e.Name)
				}
				if alike, ok := map[string]string{"spin": "spin", "nonReentrant": "non-reentrant", "nonReentrantFair": "non-reentrant-fair"}[kind]; ok {
					assert.Contains(t, e.Alike, alike, e.Name)
				}
			}
		}
	}
	for kind := range want {
		for _, side := range []string{"java", "go"} {
			assert.True(t, listed[n(side, kind)], "%s is not listed:\n%s", n(side, kind), out)
		}
	}
	assert.True(t, listed[zombie], "the zombie is not listed")
	assert.Len(t, got.Synchronizers, 2*len(want)+1, "%s", out)
	t.Logf("ls listed %d synchronizers", len(got.Synchronizers))

	// Let the Java waiters go, and clean up.
	java(peerReq{Thread: 2, Op: "unlock", Kind: "fair", Name: n("java", "fair")})
	require.True(t, (<-fairWaiter).OK)
	java(peerReq{Thread: 20, Op: "unlock", Kind: "fair", Name: n("java", "fair")})
	java(peerReq{Thread: 12, Op: "addPermits", Kind: "semaphore", Name: n("java", "semaphore"), Permits: 1})
	require.True(t, (<-semWaiter).OK)
	java(peerReq{Thread: 11, Op: "countDown", Kind: "latch", Name: n("java", "latch")})
	require.True(t, (<-latchWaiter).OK)
	for i, kind := range lockKinds {
		if kind != "fair" { // unlocked above
			java(peerReq{Thread: i + 1, Op: "unlock", Kind: kind, Name: n("java", kind)})
		}
	}
	var del []string
	for _, side := range []string{"java", "go"} {
		del = append(del, n(side, "semaphore"), n(side, "expirable"), keys.Suffix(n(side, "expirable"), "timeout"),
			n(side, "latch"), keys.Prefix("redisson_lock_token", n(side, "fenced")))
		del = append(del, keys.RateLimiter(n(side, "ratelimit"), c.ID())...)
		del = append(del, keys.RateLimiter(n(side, "ratelimitPC"), c.ID())...)
		del = append(del, keys.RateLimiter(n(side, "ratelimitPC"), p.ClientID())...)
	}
	t.Cleanup(func() { rc.Do(context.Background(), rc.B().Del().Key(append(del, zombie)...).Build()) })
}
