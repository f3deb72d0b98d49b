package compat_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
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
	"github.com/interlock-go/interlock/ratelimit"
)

// Live interop of RRateLimiter with a real Redisson JVM (peer/.../RateLimit.java),
// for every peer version, on the shared standalone server and on the shared
// three-master cluster: each side reads the other's config, a Java setRate
// takes effect for Go, and both sides draw from one limiter, overall and per
// client, acquiring as fast as they can.
//
//	go test -count=1 -run 'TestInteropRateLimit' ./compat_test/
//	INTERLOCK_TIER=nightly go test -count=1 -run 'TestInteropRateLimit' ./compat_test/   # 10s draws

// peerRateArgs are the rate limiter's request fields (RateLimit.java).
type peerRateArgs struct {
	RateType    string `json:"rateType,omitempty"`
	Rate        int64  `json:"rate,omitempty"`
	IntervalMs  int64  `json:"intervalMs,omitempty"`
	KeepAliveMs int64  `json:"keepAliveMs,omitempty"`
	DurationMs  int64  `json:"durationMs,omitempty"`
	Threads     int    `json:"threads,omitempty"`
}

// rlDrawFor is how long both sides draw from one limiter: 10s in the
// nightly tier (INTERLOCK_TIER=nightly), a few seconds in the default run.
func rlDrawFor() time.Duration {
	if os.Getenv("INTERLOCK_TIER") == "nightly" {
		return 10 * time.Second
	}
	return 2500 * time.Millisecond
}

func TestInteropRateLimit(t *testing.T) {
	t.Parallel()
	for _, version := range peerVersions {
		for _, topology := range []string{"standalone", "cluster"} {
			t.Run(version+"/"+topology, func(t *testing.T) {
				parallel(t)
				e := newInteropEnv(t, version, topology)
				t.Run("configBothWays", func(t *testing.T) { rlConfigBothWays(t, e) })
				t.Run("javaSetRateSeenByGo", func(t *testing.T) { rlJavaSetRate(t, e) })
				t.Run("draw/overall", func(t *testing.T) { rlDraw(t, e, ratelimit.Overall) })
				t.Run("draw/perClient", func(t *testing.T) { rlDraw(t, e, ratelimit.PerClient) })
			})
		}
	}
}

func rlReq(op, name string, args peerRateArgs) peerReq {
	return peerReq{Thread: 1, Op: op, Kind: "ratelimit", Name: name, RL: args}
}

// rlJavaConfig is getConfig's reply.
type rlJavaConfig struct {
	RateType   string `json:"rateType"`
	Rate       int64  `json:"rate"`
	IntervalMs int64  `json:"intervalMs"`
}

func rlConfigBothWays(t *testing.T, e *interopEnv) {
	ctx := testCtx(t, time.Minute)
	// Go sets, Java reads.
	goName := unique("rl-go")
	gl := ratelimit.New(e.c, goName)
	require.True(t, redistest.Must[bool](t)(gl.TrySetRate(ctx, ratelimit.Config{Rate: 7, Interval: 1500 * time.Millisecond})))
	var jc rlJavaConfig
	r := e.p.Do(t, rlReq("getConfig", goName, peerRateArgs{}))
	r.mustOK(t)
	require.NoError(t, json.Unmarshal(r.Result, &jc))
	assert.Equal(t, rlJavaConfig{"OVERALL", 7, 1500}, jc, "%s: Java reads Go's config", e.label)
	assert.False(t, e.p.Do(t, rlReq("trySetRate", goName, peerRateArgs{RateType: "PER_CLIENT", Rate: 9, IntervalMs: 100})).Bool(t))
	assert.EqualValues(t, 7, e.p.Do(t, rlReq("availablePermits", goName, peerRateArgs{})).Int(t))

	// Java sets, Go reads.
	javaName := unique("rl-java")
	require.True(t, e.p.Do(t, rlReq("trySetRate", javaName, peerRateArgs{RateType: "PER_CLIENT", Rate: 4, IntervalMs: 2000, KeepAliveMs: 60000})).Bool(t))
	jl := ratelimit.New(e.c, javaName)
	assert.Equal(t, ratelimit.Config{Type: ratelimit.PerClient, Rate: 4, Interval: 2 * time.Second, KeepAlive: time.Minute},
		redistest.Must[ratelimit.Config](t)(jl.Config(ctx)), "%s: Go reads Java's config", e.label)
	assert.False(t, redistest.Must[bool](t)(jl.TrySetRate(ctx, ratelimit.Config{Rate: 1, Interval: time.Second})))
	assert.EqualValues(t, 4, redistest.Must[int64](t)(jl.AvailablePermits(ctx)))

	// Deleting from either side.
	assert.True(t, e.p.Do(t, rlReq("delete", goName, peerRateArgs{})).Bool(t))
	_, err := gl.Config(ctx)
	assert.ErrorIs(t, err, ratelimit.ErrNotSet)
	assert.True(t, redistest.Must[bool](t)(jl.Delete(ctx)))
	r = e.p.Do(t, rlReq("getConfig", javaName, peerRateArgs{}))
	r.mustOK(t)
	require.NoError(t, json.Unmarshal(r.Result, &jc))
	assert.Equal(t, rlJavaConfig{"OVERALL", 0, 0}, jc, "Redisson's reading of a missing config")
}

func rlJavaSetRate(t *testing.T, e *interopEnv) {
	ctx := testCtx(t, time.Minute)
	name := unique("rl-set")
	l := ratelimit.New(e.c, name)
	require.True(t, redistest.Must[bool](t)(l.TrySetRate(ctx, ratelimit.Config{Rate: 2, Interval: time.Hour})))
	require.True(t, redistest.Must[bool](t)(l.TryAcquire(ctx, 2, 0)))
	require.False(t, redistest.Must[bool](t)(l.TryAcquire(ctx, 1, 0)))
	assert.False(t, e.p.Do(t, peerReq{Thread: 1, Op: "tryAcquire", Kind: "ratelimit", Name: name, Wait: peerNoWait, Permits: 1}).Bool(t), "Java sees Go's permits taken")

	// The other way: Java takes, Go finds the quota used.
	other := ratelimit.New(e.c, name+":java-takes")
	require.True(t, redistest.Must[bool](t)(other.TrySetRate(ctx, ratelimit.Config{Rate: 5, Interval: time.Hour})))
	assert.True(t, e.p.Do(t, peerReq{Thread: 1, Op: "tryAcquire", Kind: "ratelimit", Name: name + ":java-takes", Wait: peerNoWait, Permits: 3}).Bool(t))
	assert.EqualValues(t, 2, redistest.Must[int64](t)(other.AvailablePermits(ctx)))
	require.False(t, redistest.Must[bool](t)(other.TryAcquire(ctx, 3, 0)), "Go sees Java's permits taken")
	require.True(t, redistest.Must[bool](t)(other.TryAcquire(ctx, 2, 0)))

	e.p.Do(t, rlReq("setRate", name, peerRateArgs{RateType: "OVERALL", Rate: 5, IntervalMs: 3_600_000})).Void(t)
	assert.Equal(t, ratelimit.Config{Rate: 5, Interval: time.Hour}, redistest.Must[ratelimit.Config](t)(l.Config(ctx)))
	assert.EqualValues(t, 5, redistest.Must[int64](t)(l.AvailablePermits(ctx)), "%s: Java's setRate starts the window afresh for Go", e.label)
	require.True(t, redistest.Must[bool](t)(l.TryAcquire(ctx, 5, 0)))
	require.False(t, redistest.Must[bool](t)(l.TryAcquire(ctx, 1, 0)))
	_, err := l.TryAcquire(ctx, 6, 0)
	assert.ErrorIs(t, err, interlock.ErrInvalid, "above Java's new rate")

	// A Go wait ends when Java's setRate frees the window... only at the
	// next try, which the server's delay (an hour) puts out of reach: the
	// wait is bounded by the caller instead.
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, l.Acquire(short, 1), context.DeadlineExceeded)
}

// rlDraw has Go (two goroutines) and Java (two threads) take single
// permits as fast as they can for rlDrawFor, on a limiter of rate R per
// interval I, while a watcher collects every zset member the keys ever
// held. It checks: Go's and Java's counts add up to the members seen in
// the keys; no interval of the keys holds more than R; and the total is
// within R x (duration / I) +- R, per client for PerClient.
func rlDraw(t *testing.T, e *interopEnv, typ ratelimit.RateType) {
	const (
		rate     = 40
		interval = 500 * time.Millisecond
	)
	d := rlDrawFor()
	ctx := testCtx(t, d+time.Minute)
	name := unique("rl-draw")
	l := ratelimit.New(e.c, name)
	require.True(t, redistest.Must[bool](t)(l.TrySetRate(ctx, ratelimit.Config{Type: typ, Rate: rate, Interval: interval})))
	javaType := "OVERALL"
	if typ == ratelimit.PerClient {
		javaType = "PER_CLIENT"
	}
	require.Equal(t, rlJavaConfig{javaType, rate, interval.Milliseconds()}, func() rlJavaConfig {
		var jc rlJavaConfig
		r := e.p.Do(t, rlReq("getConfig", name, peerRateArgs{}))
		r.mustOK(t)
		require.NoError(t, json.Unmarshal(r.Result, &jc))
		return jc
	}())

	zsets := map[string]string{"all": keys.Suffix(name, "permits")}
	if typ == ratelimit.PerClient {
		zsets = map[string]string{
			"go":   keys.Suffix(keys.Suffix(name, "permits"), e.c.ID()),
			"java": keys.Suffix(keys.Suffix(name, "permits"), e.p.ClientID()),
		}
	}
	w := newRLWatcher(e.rc, zsets, interval/5)
	stopWatch := w.run(ctx)

	start := time.Now()
	javaDone := e.p.Start(t, rlReq("drain", name, peerRateArgs{DurationMs: d.Milliseconds(), Threads: 2}))
	if typ == ratelimit.Overall {
		// Redisson's timer wakes its waiters up to rlJavaTick late, Go's within a millisecond of the
		// server's delay: once both wait, Go takes what frees first. So
		// Java starts alone and takes the first window, to be sure both
		// sides' grants count against the one quota.
		require.True(t, waitFor(10*time.Second, func() bool { return len(w.seen("all")) > 0 }), "Java took no permit")
	}
	var goGranted atomic.Int64
	var wg sync.WaitGroup
	end := start.Add(d)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left := time.Until(end); left > 0; left = time.Until(end) {
				ok, err := l.TryAcquire(ctx, 1, left)
				if err != nil {
					t.Errorf("Go TryAcquire: %v", err)
					return
				}
				if ok {
					goGranted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	var javaGranted int64
	select {
	case r := <-javaDone:
		javaGranted = r.Int(t)
	case <-time.After(d + peerDoTimeout):
		t.Fatalf("%s: Java's drain did not come back", e.label)
	}
	took := time.Since(start)
	stopWatch()

	windows := float64(d) / float64(interval)
	// check holds a side's (or both sides') grants to the rate: never more
	// than rate x windows + one interval's worth; and no fewer than one
	// interval's worth below that, for a taker that wakes late by up to
	// lateBy after each interval (Redisson's timer).
	check := func(who string, granted int64, seen []rlGrant, lateBy time.Duration) {
		t.Helper()
		want := rate * windows
		least := rate*float64(d)/float64(interval+lateBy) - rate
		t.Logf("%s %s %s: %d granted in %v (rate %d per %v: %.0f + %d at most, %.0f at least)", e.label, typ, who, granted, d, rate, interval, want, rate, least)
		assert.LessOrEqual(t, float64(granted), want+rate, "%s %s: total granted above the rate", e.label, who)
		assert.GreaterOrEqual(t, float64(granted), least, "%s %s: total granted far below the rate", e.label, who)
		assert.EqualValues(t, granted, rlSum(seen), "%s %s: the keys hold every grant, and only those", e.label, who)
		// Scores are the takers' clocks, read before the request travels,
		// so a grant the server ran later may carry a slightly older
		// score: the window checked is rlScoreSkew short of an interval.
		if worst, at := rlWorstWindow(seen, interval-rlScoreSkew); worst > rate {
			t.Errorf("%s %s: %d permits within one interval from %d ms", e.label, who, worst, at)
		}
	}
	if typ == ratelimit.Overall {
		t.Logf("Go %d + Java %d, took %v", goGranted.Load(), javaGranted, took)
		check("Go+Java", goGranted.Load()+javaGranted, w.seen("all"), 0)
		assert.Positive(t, goGranted.Load(), "Go got some")
		assert.Positive(t, javaGranted, "Java got some")
	} else {
		check("Go", goGranted.Load(), w.seen("go"), 0)
		check("Java", javaGranted, w.seen("java"), rlJavaTick)
	}
}

// rlJavaTick is how late Redisson's waits may wake: its HashedWheelTimer
// ticks every 100ms with the default 3s command timeout.
const rlJavaTick = 100 * time.Millisecond

// rlScoreSkew bounds how far out of order by score the server may run
// grants: a request's travel and queueing, on one host.
const rlScoreSkew = 25 * time.Millisecond

// rlGrant is one zset member: its random bytes, permits and score.
type rlGrant struct {
	permits int64
	score   int64
}

// rlWatcher reads the zsets often enough (well under an interval) that no
// member leaves them unseen, and keeps every member it saw.
type rlWatcher struct {
	rc    rueidis.Client
	zsets map[string]string
	every time.Duration
	mu    sync.Mutex
	got   map[string]map[string]rlGrant
	err   error
}

func newRLWatcher(rc rueidis.Client, zsets map[string]string, every time.Duration) *rlWatcher {
	w := &rlWatcher{rc: rc, zsets: zsets, every: every, got: map[string]map[string]rlGrant{}}
	for k := range zsets {
		w.got[k] = map[string]rlGrant{}
	}
	return w
}

// run reads until the returned stop is called; stop reads once more.
func (w *rlWatcher) run(ctx context.Context) (stop func()) {
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		tick := time.NewTicker(w.every)
		defer tick.Stop()
		for {
			w.read(ctx)
			select {
			case <-done:
				w.read(ctx)
				return
			case <-tick.C:
			}
		}
	}()
	return func() { close(done); <-exited }
}

func (w *rlWatcher) read(ctx context.Context) {
	for label, key := range w.zsets {
		zs, err := w.rc.Do(ctx, w.rc.B().Zrange().Key(key).Min("0").Max("-1").Withscores().Build()).AsZScores()
		w.mu.Lock()
		if err != nil && w.err == nil {
			w.err = err
		}
		for _, z := range zs {
			m := z.Member
			if len(m) < 1 || len(m) != int(m[0])+5 {
				w.err = errors.New("a zset member of " + strconv.Itoa(len(m)) + " bytes is no rate limiter's")
				continue
			}
			w.got[label][m[1:1+int(m[0])]] = rlGrant{permits: int64(binary.LittleEndian.Uint32([]byte(m[1+int(m[0]):]))), score: int64(z.Score)}
		}
		w.mu.Unlock()
	}
}

func (w *rlWatcher) seen(label string) []rlGrant {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]rlGrant, 0, len(w.got[label]))
	for _, g := range w.got[label] {
		out = append(out, g)
	}
	return out
}

func rlSum(gs []rlGrant) int64 {
	var n int64
	for _, g := range gs {
		n += g.permits
	}
	return n
}

// rlWorstWindow returns the most permits whose scores fall within one
// interval (a half-open window (s - interval, s] ending at some score s),
// and where that window ends.
func rlWorstWindow(gs []rlGrant, interval time.Duration) (int64, int64) {
	var worst, at int64
	ms := interval.Milliseconds()
	for _, end := range gs {
		var n int64
		for _, g := range gs {
			if g.score > end.score-ms && g.score <= end.score {
				n += g.permits
			}
		}
		if n > worst {
			worst, at = n, end.score
		}
	}
	return worst, at
}

// TestInteropRateLimitNameMapper: a Go Client with PrefixNames and a
// Redisson peer with the same NameMapper share one limiter, on the mapped
// keys: Go's config is Java's, and the quota is one.
func TestInteropRateLimitNameMapper(t *testing.T) {
	t.Parallel()
	for _, v := range peerVersions {
		t.Run("redisson-"+v, func(t *testing.T) {
			parallel(t)
			rc := redistest.NewClient(t, standaloneAddr)
			mapped := newLockClient(t, rc, interlock.WithNameMapper(interlock.PrefixNames(namePrefix)))
			peer := startJavaPeer(t, v, []string{standaloneAddr}, withPeerNamePrefix(namePrefix))
			ctx := testCtx(t, time.Minute)
			name := unique("rl-names")
			t.Cleanup(func() { redistest.DeleteLike([]string{standaloneAddr}, name) })
			l := ratelimit.New(mapped, name)
			require.True(t, redistest.Must[bool](t)(l.TrySetRate(ctx, ratelimit.Config{Rate: 3, Interval: time.Hour})))
			require.True(t, redistest.Must[bool](t)(l.TryAcquire(ctx, 2, 0)))
			for _, key := range []string{namePrefix + name, "{" + namePrefix + name + "}:value", "{" + namePrefix + name + "}:permits"} {
				n, err := rc.Do(ctx, rc.B().Exists().Key(key).Build()).AsInt64()
				require.NoError(t, err)
				assert.EqualValues(t, 1, n, "%s: the mapped key %s", v, key)
			}
			var jc rlJavaConfig
			r := peer.Do(t, rlReq("getConfig", name, peerRateArgs{}))
			r.mustOK(t)
			require.NoError(t, json.Unmarshal(r.Result, &jc))
			assert.Equal(t, rlJavaConfig{"OVERALL", 3, 3_600_000}, jc, "Java reads Go's config through its mapper")
			assert.EqualValues(t, 1, peer.Do(t, rlReq("availablePermits", name, peerRateArgs{})).Int(t))
			assert.True(t, peer.Do(t, peerReq{Thread: 1, Op: "tryAcquire", Kind: "ratelimit", Name: name, Wait: peerNoWait, Permits: 1}).Bool(t))
			assert.False(t, redistest.Must[bool](t)(l.TryAcquire(ctx, 1, 0)), "the quota is one")
		})
	}
}
