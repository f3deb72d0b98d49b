package compat_test

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/redistest"
)

// permitIDRE is how Redisson prints a permit id.
var permitIDRE = regexp.MustCompile(`^[0-9a-f]{32}$`)

// peerNever is the score of a permit with no lease (Long.MAX_VALUE/10000).
const peerNever = 922337203685477

// syncState reads the Redis side of the peer's semaphores and latches.
type syncState struct {
	t  *testing.T
	rc rueidis.Client
}

func (s syncState) ctx() context.Context { return s.t.Context() }

// get returns GET key, and "<nil>" when the key is missing.
func (s syncState) get(key string) string {
	s.t.Helper()
	v, err := s.rc.Do(s.ctx(), s.rc.B().Get().Key(key).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return "<nil>"
	}
	if err != nil {
		s.t.Fatalf("GET %s: %v", key, err)
	}
	return v
}

func (s syncState) wantGet(key, want string) {
	s.t.Helper()
	if got := s.get(key); got != want {
		s.t.Fatalf("GET %s = %s, want %s", key, got, want)
	}
}

func (s syncState) pttl(key string) int64 {
	s.t.Helper()
	v, err := s.rc.Do(s.ctx(), s.rc.B().Pttl().Key(key).Build()).AsInt64()
	if err != nil {
		s.t.Fatalf("PTTL %s: %v", key, err)
	}
	return v
}

func (s syncState) exists(key string) bool {
	s.t.Helper()
	v, err := s.rc.Do(s.ctx(), s.rc.B().Exists().Key(key).Build()).AsInt64()
	if err != nil {
		s.t.Fatalf("EXISTS %s: %v", key, err)
	}
	return v == 1
}

// score returns ZSCORE key of the raw bytes of the hex permit id, and false
// when the id is not in the zset.
func (s syncState) score(key, id string) (float64, bool) {
	s.t.Helper()
	v, err := s.rc.Do(s.ctx(), s.rc.B().Zscore().Key(key).Member(peerPermitRaw(s.t, id)).Build()).AsFloat64()
	if rueidis.IsRedisNil(err) {
		return 0, false
	}
	if err != nil {
		s.t.Fatalf("ZSCORE %s %s: %v", key, id, err)
	}
	return v, true
}

// TestPeerSyncSmoke drives every semaphore and latch op of the peer once, on
// both Redisson versions, and checks what each one left in Redis.
func TestPeerSyncSmoke(t *testing.T) {
	t.Parallel()
	for _, v := range peerVersions {
		t.Run("redisson-"+v, func(t *testing.T) {
			parallel(t)
			p := startJavaPeer(t, v, []string{standaloneAddr})
			s := syncState{t: t, rc: redistest.NewClient(t, standaloneAddr)}
			t.Run("semaphore", func(t *testing.T) { smokeSemaphore(t, p, syncState{t, s.rc}) })
			t.Run("expirable", func(t *testing.T) { smokeExpirable(t, p, syncState{t, s.rc}) })
			t.Run("latch", func(t *testing.T) { smokeLatch(t, p, syncState{t, s.rc}) })
		})
	}
}

func smokeSemaphore(t *testing.T, p *javaPeer, s syncState) {
	n, n2 := unique("peer-sem"), unique("peer-sem-ttl")
	do := func(thread int, op string, permits int, wait time.Duration) peerReply {
		t.Helper()
		return p.Do(t, peerReq{Thread: thread, Op: op, Kind: "semaphore", Name: n, Permits: permits, Wait: wait})
	}

	if !do(1, "trySetPermits", 3, 0).Bool(t) {
		t.Fatal("trySetPermits(3) on a missing key: false")
	}
	s.wantGet(n, "3")
	if ttl := s.pttl(n); ttl != -1 {
		t.Fatalf("PTTL after trySetPermits(3) = %d", ttl)
	}
	if do(1, "trySetPermits", 5, 0).Bool(t) {
		t.Fatal("trySetPermits(5) on an existing key: true")
	}
	s.wantGet(n, "3")

	r := p.Do(t, peerReq{Thread: 1, Op: "trySetPermits", Kind: "semaphore", Name: n2, Permits: 4, TTL: time.Minute})
	if !r.Bool(t) {
		t.Fatal("trySetPermits(4, 1m): false")
	}
	s.wantGet(n2, "4")
	if ttl := s.pttl(n2); ttl <= 0 || ttl > 60000 {
		t.Fatalf("PTTL after trySetPermits(4, 1m) = %d", ttl)
	}
	if ttl := p.Do(t, peerReq{Thread: 1, Op: "remainTimeToLive", Kind: "semaphore", Name: n2}).Int(t); ttl <= 0 || ttl > 60000 {
		t.Fatalf("remainTimeToLive = %d", ttl)
	}
	if !p.Do(t, peerReq{Thread: 1, Op: "delete", Kind: "semaphore", Name: n2}).Bool(t) || s.exists(n2) {
		t.Fatal("delete of the TTL semaphore failed")
	}

	do(1, "addPermits", 2, 0).Void(t)
	s.wantGet(n, "5")
	if !do(1, "tryAcquire", 2, peerNoWait).Bool(t) {
		t.Fatal("tryAcquire(2) with 5 free: false")
	}
	s.wantGet(n, "3")
	if !do(1, "tryAcquire", 1, 100*time.Millisecond).Bool(t) {
		t.Fatal("tryAcquire(1, 100ms) with 3 free: false")
	}
	s.wantGet(n, "2")
	do(1, "acquire", 2, 0).Void(t)
	s.wantGet(n, "0")

	// A blocked acquire on thread 2 leaves threads 1 and 3 working, and
	// returns once thread 1 releases.
	blocked := p.Start(t, peerReq{Thread: 2, Op: "acquire", Kind: "semaphore", Name: n, Permits: 1})
	if do(3, "tryAcquire", 1, peerNoWait).Bool(t) {
		t.Fatal("tryAcquire(1) with none free: true")
	}
	do(1, "release", 1, 0).Void(t)
	select {
	case r := <-blocked:
		r.Void(t)
	case <-time.After(20 * time.Second):
		t.Fatal("acquire(1) still blocked 20s after release(1)")
	}
	s.wantGet(n, "0")

	do(1, "release", 2, 0).Void(t)
	s.wantGet(n, "2")
	start := time.Now()
	if do(1, "tryAcquire", 5, 200*time.Millisecond).Bool(t) {
		t.Fatal("tryAcquire(5, 200ms) with 2 free: true")
	}
	if el := time.Since(start); el < 150*time.Millisecond {
		t.Fatalf("tryAcquire(5, 200ms) gave up after %v", el)
	}

	want := int64(2)
	r = do(1, "releaseIfExists", 1, 0)
	if strings.HasPrefix(p.Version(), "3.") {
		if r.OK || !strings.HasPrefix(r.Err, "UnsupportedOperationException: ") {
			t.Fatalf("releaseIfExists on %s: %+v", p.Version(), r)
		}
	} else {
		if !r.Bool(t) {
			t.Fatal("releaseIfExists(1) on an existing key: false")
		}
		want = 3
		missing := unique("peer-sem-none")
		if p.Do(t, peerReq{Thread: 1, Op: "releaseIfExists", Kind: "semaphore", Name: missing, Permits: 1}).Bool(t) || s.exists(missing) {
			t.Fatal("releaseIfExists(1) on a missing key: true, or the key was created")
		}
	}
	s.wantGet(n, strconv.FormatInt(want, 10))
	if got := do(1, "availablePermits", 0, 0).Int(t); got != want {
		t.Fatalf("availablePermits = %d, want %d", got, want)
	}
	if got := do(1, "drainPermits", 0, 0).Int(t); got != want {
		t.Fatalf("drainPermits = %d, want %d", got, want)
	}
	s.wantGet(n, "0")
	if !do(1, "delete", 0, 0).Bool(t) || s.exists(n) {
		t.Fatal("delete failed")
	}
	if r := do(1, "nonsense", 0, 0); r.OK || !strings.HasPrefix(r.Err, "IllegalArgumentException: ") {
		t.Fatalf("unknown op: %+v", r)
	}
}

func smokeExpirable(t *testing.T, p *javaPeer, s syncState) {
	n := unique("peer-pes")
	tk := "{" + n + "}:timeout"
	req := func(thread int, op string) peerReq {
		return peerReq{Thread: thread, Op: op, Kind: "expirable", Name: n}
	}
	withPermits := func(r peerReq, permits int) peerReq { r.Permits = permits; return r }
	withIDs := func(r peerReq, ids ...string) peerReq { r.IDs = ids; return r }
	checkIDs := func(ids []string, want int) {
		t.Helper()
		if len(ids) != want {
			t.Fatalf("got %d ids %q, want %d", len(ids), ids, want)
		}
		for _, id := range ids {
			if !permitIDRE.MatchString(id) {
				t.Fatalf("permit id %q is not 32 lower-case hex", id)
			}
		}
	}
	nowMs := func() float64 { return float64(time.Now().UnixMilli()) }

	if !p.Do(t, withPermits(req(1, "trySetPermits"), 3)).Bool(t) {
		t.Fatal("trySetPermits(3): false")
	}
	s.wantGet(n, "3")
	p.Do(t, withPermits(req(1, "setPermits"), 4)).Void(t)
	s.wantGet(n, "4")
	p.Do(t, withPermits(req(1, "addPermits"), 1)).Void(t)
	s.wantGet(n, "5")

	r := withPermits(req(1, "tryAcquire"), 1)
	r.Wait = peerNoWait
	never := p.Do(t, r).IDs(t)
	checkIDs(never, 1)
	if sc, ok := s.score(tk, never[0]); !ok || sc != peerNever {
		t.Fatalf("ZSCORE of a lease-less permit = %v, %v", sc, ok)
	}
	s.wantGet(n, "4")

	r = withPermits(req(1, "tryAcquire"), 2)
	r.Lease = 10 * time.Second
	before := nowMs()
	leased := p.Do(t, r).IDs(t)
	checkIDs(leased, 2)
	for _, id := range leased {
		if sc, ok := s.score(tk, id); !ok || sc < before+10000 || sc > nowMs()+10000 {
			t.Fatalf("ZSCORE of a 10s permit = %v, %v (acquired at %v)", sc, ok, before)
		}
	}
	s.wantGet(n, "2")

	r = withPermits(req(1, "acquire"), 1)
	r.Lease = peerNoLease
	held := p.Do(t, r).IDs(t)
	r.Lease = 20 * time.Second
	held = append(held, p.Do(t, r).IDs(t)...)
	checkIDs(held, 2)
	s.wantGet(n, "0")

	r = withPermits(req(1, "tryAcquire"), 1)
	r.Wait, r.Lease = 100*time.Millisecond, 5*time.Second
	if ids := p.Do(t, r).IDs(t); len(ids) != 0 {
		t.Fatalf("tryAcquire with none free: %q", ids)
	}
	for op, want := range map[string]int64{"availablePermits": 0, "getPermits": 5, "acquiredPermits": 5} {
		if got := p.Do(t, req(1, op)).Int(t); got != want {
			t.Fatalf("%s = %d, want %d", op, got, want)
		}
	}

	if got := p.Do(t, withIDs(req(1, "getLeaseTime"), never[0])).Int(t); got != -1 {
		t.Fatalf("getLeaseTime of a lease-less permit = %d", got)
	}
	if got := p.Do(t, withIDs(req(1, "getLeaseTime"), leased[0])).Int(t); got <= 0 || got > 10000 {
		t.Fatalf("getLeaseTime of a 10s permit = %d", got)
	}
	r = withIDs(req(1, "updateLeaseTime"), never[0])
	r.Lease = 30 * time.Second
	before = nowMs()
	if !p.Do(t, r).Bool(t) {
		t.Fatal("updateLeaseTime: false")
	}
	if sc, ok := s.score(tk, never[0]); !ok || sc < before+30000 || sc > nowMs()+30000 {
		t.Fatalf("ZSCORE after updateLeaseTime(30s) = %v, %v", sc, ok)
	}

	if !p.Do(t, withIDs(req(1, "tryReleaseOne"), never[0])).Bool(t) {
		t.Fatal("tryReleaseOne: false")
	}
	if _, ok := s.score(tk, never[0]); ok {
		t.Fatal("released permit still in the zset")
	}
	s.wantGet(n, "1")
	if p.Do(t, withIDs(req(1, "tryReleaseOne"), never[0])).Bool(t) {
		t.Fatal("tryReleaseOne of a released id: true")
	}
	if r := p.Do(t, withIDs(req(1, "releaseOne"), never[0])); r.OK || !strings.Contains(r.Err, "; caused by IllegalArgumentException: ") {
		t.Fatalf("releaseOne of a released id: %+v", r)
	}
	if got := p.Do(t, withIDs(req(1, "tryRelease"), leased...)).Int(t); got != 2 {
		t.Fatalf("tryRelease of 2 ids = %d", got)
	}
	s.wantGet(n, "3")
	p.Do(t, withIDs(req(1, "release"), held...)).Void(t)
	s.wantGet(n, "5")
	if s.exists(tk) {
		t.Fatal("the zset outlived its last permit")
	}

	// A blocked acquire on thread 2 returns once thread 1 releases.
	all := p.Do(t, withPermits(req(1, "acquire"), 5)).IDs(t)
	checkIDs(all, 5)
	s.wantGet(n, "0")
	blocked := p.Start(t, withPermits(req(2, "acquire"), 1))
	p.Do(t, withIDs(req(1, "releaseOne"), all[0])).Void(t)
	select {
	case r := <-blocked:
		got := r.IDs(t)
		checkIDs(got, 1)
		if _, ok := s.score(tk, got[0]); !ok {
			t.Fatal("the blocked acquire's permit is not in the zset")
		}
		all[0] = got[0]
	case <-time.After(20 * time.Second):
		t.Fatal("acquire(1) still blocked 20s after a release")
	}
	s.wantGet(n, "0")

	if ttl := p.Do(t, req(1, "remainTimeToLive")).Int(t); ttl != -1 {
		t.Fatalf("remainTimeToLive = %d", ttl)
	}
	if !p.Do(t, req(1, "delete")).Bool(t) || s.exists(n) || s.exists(tk) {
		t.Fatal("delete failed")
	}
}

func smokeLatch(t *testing.T, p *javaPeer, s syncState) {
	n := unique("peer-latch")
	req := func(thread int, op string) peerReq {
		return peerReq{Thread: thread, Op: op, Kind: "latch", Name: n}
	}
	set := func(count int64) bool {
		r := req(1, "trySetCount")
		r.Count = count
		return p.Do(t, r).Bool(t)
	}

	if !set(2) {
		t.Fatal("trySetCount(2): false")
	}
	s.wantGet(n, "2")
	if set(5) {
		t.Fatal("trySetCount(5) on a set latch: true")
	}
	if got := p.Do(t, req(1, "getCount")).Int(t); got != 2 {
		t.Fatalf("getCount = %d", got)
	}
	r := req(1, "await")
	r.Wait = 100 * time.Millisecond
	if p.Do(t, r).Bool(t) {
		t.Fatal("await(100ms) at count 2: true")
	}

	untimed := req(2, "await")
	untimed.Wait = peerForever
	timed := req(3, "await")
	timed.Wait = 20 * time.Second
	c2, c3 := p.Start(t, untimed), p.Start(t, timed)
	p.Do(t, req(1, "countDown")).Void(t)
	s.wantGet(n, "1")
	p.Do(t, req(1, "countDown")).Void(t)
	if s.exists(n) {
		t.Fatal("the latch key outlived count 0")
	}
	for i, c := range []<-chan peerReply{c2, c3} {
		select {
		case r := <-c:
			if i == 0 {
				r.Void(t) // await()
			} else if !r.Bool(t) {
				t.Fatal("await(20s) at count 0: false")
			}
		case <-time.After(20 * time.Second):
			t.Fatal("await still blocked 20s after count 0")
		}
	}
	if got := p.Do(t, req(1, "getCount")).Int(t); got != 0 {
		t.Fatalf("getCount after count 0 = %d", got)
	}

	if !set(1) || !p.Do(t, req(1, "delete")).Bool(t) || s.exists(n) {
		t.Fatal("trySetCount(1) then delete failed")
	}
	if p.Do(t, req(1, "delete")).Bool(t) {
		t.Fatal("delete of a missing latch: true")
	}
	if r := p.Do(t, req(1, "remainTimeToLive")); r.OK || !strings.HasPrefix(r.Err, "IllegalArgumentException: ") {
		t.Fatalf("remainTimeToLive on a latch: %+v", r)
	}
}
