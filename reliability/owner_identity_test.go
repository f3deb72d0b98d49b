package reliability

// T1 (docs/reliability.md, hazard H1): owner identity. Random nested
// lock/unlock programs over four owners of one process, compared with a
// model of the lock hash after every step, with unlock attempts by owners
// that hold nothing, which must all be refused and leave the key as it was.

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/fenced"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/rlock"
)

// t01Locker is what T1 needs of a reentrant lock kind.
type t01Locker interface {
	Lock(ctx context.Context) error
	TryLock(ctx context.Context, wait, lease time.Duration) (bool, error)
	Unlock(ctx context.Context) error
}

// t01Kind is one lock kind under test.
type t01Kind struct {
	name    string
	newLock func(c *interlock.Client, name string) t01Locker
	notHeld error
	token   bool // fenced: every acquisition increments the token counter
}

var t01Kinds = []t01Kind{
	{name: "rlock", notHeld: interlock.ErrNotHeld,
		newLock: func(c *interlock.Client, n string) t01Locker { return rlock.New(c, n) }},
	{name: "fenced", notHeld: interlock.ErrNotHeld, token: true,
		newLock: func(c *interlock.Client, n string) t01Locker { return fenced.New(c, n) }},
	{name: "fairlock", notHeld: interlock.ErrNotHeld,
		newLock: func(c *interlock.Client, n string) t01Locker { return fairlock.New(c, n) }},
}

// t01Handle is one of the four owners: a Client, a context that selects
// the owner (or the goroutine default), and the hash field it must write.
// renewals counts the renewal ticks of its Client that sent holds.
type t01Handle struct {
	label    string
	client   *interlock.Client
	renewals *atomic.Int64
	ctx      context.Context
	lock     t01Locker
	field    string
}

func TestT01Identity(t *testing.T) {
	srv := redistest.Standalone(t)
	rc := srv.Client(t)
	programs := sized(1000, 1000)
	maxSteps := sized(12, 40)
	for _, k := range t01Kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			t01Run(t, srv, rc, k, programs, maxSteps)
		})
	}
}

func t01Run(t *testing.T, srv *redistest.Server, rc rueidis.Client, k t01Kind, programs, maxSteps int) {
	c1, renewals1 := t01Client(t, srv)
	c2, renewals2 := t01Client(t, srv)
	renewals := map[*interlock.Client]*atomic.Int64{c1: renewals1, c2: renewals2}
	name := "t01:" + k.name
	tokenKey := keys.Prefix("redisson_lock_token", name)

	// Four owners: two explicit ids on one Client, this goroutine's own id
	// on the same Client, and the first explicit id again on a second
	// Client, which must be a different owner all the same.
	shared := interlock.NewOwnerID()
	base := t.Context()
	gid, err := interlock.OwnerID(base)
	require.NoError(t, err)
	other := interlock.NewOwnerID()
	handle := func(label string, c *interlock.Client, ctx context.Context, id int64) *t01Handle {
		return &t01Handle{label: label, client: c, renewals: renewals[c], ctx: ctx, lock: k.newLock(c, name),
			field: c.ID() + ":" + strconv.FormatInt(id, 10)}
	}
	hs := []*t01Handle{
		handle("c1/explicit-a", c1, interlock.WithOwner(base, shared), shared),
		handle("c1/explicit-b", c1, interlock.WithOwner(base, other), other),
		handle("c1/goroutine", c1, base, gid),
		handle("c2/explicit-a", c2, interlock.WithOwner(base, shared), shared),
	}
	fields := map[string]bool{}
	for _, h := range hs {
		got, err := h.client.Owner(h.ctx)
		require.NoError(t, err)
		require.Equal(t, h.field, got, "%s: owner string", h.label)
		fields[h.field] = true
	}
	require.Len(t, fields, len(hs), "every handle must have its own field")

	rng := rand.New(rand.NewPCG(rand.Uint64(), 0))
	var steps, cross, refused, busy, acquired, renewedAcross int
	var token int64
	model := map[string]int{} // field -> hold count; at most one field is non-zero
	check := func(where string) {
		t.Helper()
		got, ttl, tok := t01Read(t, rc, name, tokenKey, k.token)
		want := map[string]string{}
		for f, n := range model {
			if n > 0 {
				want[f] = strconv.Itoa(n)
			}
		}
		require.Equal(t, want, got, "%s: lock hash", where)
		if len(want) > 0 {
			require.Greater(t, ttl, int64(0), "%s: a held lock must expire", where)
		}
		if k.token {
			require.Equal(t, token, tok, "%s: token counter", where)
		}
	}
	holder := func() *t01Handle {
		for _, h := range hs {
			if model[h.field] > 0 {
				return h
			}
		}
		return nil
	}
	const maxDepth = 5
	for p := range programs {
		n := 1 + rng.IntN(maxSteps)
		for s := range n {
			steps++
			h := hs[rng.IntN(len(hs))]
			cur := holder()
			where := fmt.Sprintf("program %d step %d (%s)", p, s, h.label)
			switch {
			case cur == nil:
				// Free: Lock must succeed at once.
				ctx, cancel := context.WithTimeout(h.ctx, 10*time.Second)
				err := h.lock.Lock(ctx)
				cancel()
				require.NoError(t, err, "%s: lock a free lock", where)
				model[h.field]++
				token++
				acquired++
			case cur == h && model[h.field] < maxDepth && rng.IntN(2) == 0:
				ok, err := h.lock.TryLock(h.ctx, 0, 0)
				require.NoError(t, err, "%s: re-enter", where)
				require.True(t, ok, "%s: re-enter", where)
				model[h.field]++
				token++
				acquired++
			case cur == h:
				require.NoError(t, h.lock.Unlock(h.ctx), "%s: unlock own hold", where)
				model[h.field]--
			case rng.IntN(2) == 0:
				ok, err := h.lock.TryLock(h.ctx, 0, 0)
				require.NoError(t, err, "%s: try a lock held by %s", where, cur.label)
				require.False(t, ok, "%s: acquired a lock held by %s", where, cur.label)
				busy++
			default:
				renewals := cur.renewals.Load()
				before, ttlBefore, _ := t01Read(t, rc, name, tokenKey, false)
				cross++
				err := h.lock.Unlock(h.ctx)
				require.ErrorIs(t, err, k.notHeld, "%s: unlock of a lock held by %s", where, cur.label)
				refused++
				after, ttlAfter, _ := t01Read(t, rc, name, tokenKey, false)
				require.Equal(t, before, after, "%s: a refused unlock changed the hash", where)
				if ttlAfter > ttlBefore {
					// Only the holder's own watchdog may have moved the
					// expiry between the reads: its Client renews every
					// hold at each tick, however young. That renewal's
					// reply may still be on its way.
					renewed := t01Renewed(cur, renewals)
					require.True(t, renewed, "%s: a refused unlock extended the lease (PTTL %d ms, then %d ms), and the holder's Client sent no renewal",
						where, ttlBefore, ttlAfter)
					require.LessOrEqual(t, ttlAfter, interlock.DefaultWatchdogTimeout.Milliseconds(), "%s: renewed past the watchdog timeout", where)
					renewedAcross++
				}
			}
			check(where)
		}
		// End of program: the holder unwinds, and an owner with nothing
		// tries an unlock on the free lock too.
		if cur := holder(); cur != nil {
			for model[cur.field] > 0 {
				require.NoError(t, cur.lock.Unlock(cur.ctx), "program %d: unwind %s", p, cur.label)
				model[cur.field]--
				check(fmt.Sprintf("program %d unwind", p))
			}
		}
		h := hs[rng.IntN(len(hs))]
		cross++
		require.ErrorIs(t, h.lock.Unlock(h.ctx), k.notHeld, "program %d: unlock of a free lock by %s", p, h.label)
		refused++
		check(fmt.Sprintf("program %d end", p))
	}
	require.Equal(t, 0, c1.Stats().Holds+c2.Stats().Holds, "renewal entries left after every program unwound")
	t.Logf("T01 %s: %d programs, %d steps, %d acquisitions, %d busy tries, %d cross-handle unlocks, %d rejected (%.0f%%), %d unique fields; the holder's watchdog renewed between the two reads of %d refused unlocks",
		k.name, programs, steps, acquired, busy, cross, refused, 100*float64(refused)/float64(max(cross, 1)), len(fields), renewedAcross)
}

// t01Client returns an interlock Client on srv, closed when t ends, and
// the count of its renewal ticks that sent holds.
func t01Client(t *testing.T, srv *redistest.Server) (*interlock.Client, *atomic.Int64) {
	t.Helper()
	renewals := new(atomic.Int64)
	c, err := interlock.New(srv.Client(t), interlock.WithObserver(interlock.ObserverFunc(func(_ context.Context, e interlock.Event) {
		if e.Op == interlock.OpRenew && e.Entries > 0 {
			renewals.Add(1)
		}
	})))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c, renewals
}

// t01Renewed reports whether h's Client finished a renewal tick since its
// count was since, waiting up to a few seconds for one whose reply is still
// on its way.
func t01Renewed(h *t01Handle, since int64) bool {
	deadline := time.Now().Add(5 * time.Second)
	for h.renewals.Load() == since {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// t01Read returns the lock hash, its PTTL and (when withToken) the token
// counter, in one round trip.
func t01Read(t *testing.T, rc rueidis.Client, name, tokenKey string, withToken bool) (map[string]string, int64, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmds := rueidis.Commands{
		rc.B().Hgetall().Key(name).Build(),
		rc.B().Pttl().Key(name).Build(),
	}
	if withToken {
		cmds = append(cmds, rc.B().Get().Key(tokenKey).Build())
	}
	res := rc.DoMulti(ctx, cmds...)
	h, err := res[0].AsStrMap()
	require.NoError(t, err)
	ttl, err := res[1].AsInt64()
	require.NoError(t, err)
	var tok int64
	if withToken {
		tok, err = res[2].AsInt64()
		if rueidis.IsRedisNil(err) {
			tok, err = 0, nil
		}
		require.NoError(t, err)
	}
	if h == nil {
		h = map[string]string{}
	}
	return maps.Clone(h), ttl, tok
}
