package interlock_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/fenced"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/latch"
	"github.com/interlock-go/interlock/multilock"
	"github.com/interlock-go/interlock/nonreentrant"
	"github.com/interlock-go/interlock/rlock"
	"github.com/interlock-go/interlock/rwlock"
	"github.com/interlock-go/interlock/semaphore"
	"github.com/interlock-go/interlock/spin"
)

// countingClient counts the commands handed to it that name a key or
// channel containing mark.
type countingClient struct {
	rueidis.Client
	mark string
	n    atomic.Int64
}

func (c *countingClient) count(cmds ...rueidis.Completed) {
	for _, cmd := range cmds {
		for _, arg := range cmd.Commands() {
			if strings.Contains(arg, c.mark) {
				c.n.Add(1)
				break
			}
		}
	}
}

func (c *countingClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.count(cmd)
	return c.Client.Do(ctx, cmd)
}

func (c *countingClient) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	c.count(cmds...)
	return c.Client.DoMulti(ctx, cmds...)
}

// doneContexts are the ways a caller's context is over: cancelled, or
// past its deadline.
func doneContexts(parent context.Context) map[string]context.Context {
	cancelled, cancel := context.WithCancel(parent)
	cancel()
	late, cancel := context.WithDeadline(parent, time.Now().Add(-time.Second))
	cancel()
	return map[string]context.Context{"cancelled": cancelled, "past deadline": late}
}

// An acquisition whose context has ended already sends nothing and returns
// the context's error: there is nothing to take back.
func TestAcquireWithEndedContextSendsNothing(t *testing.T) {
	name := "edges:" + t.Name()
	cc := &countingClient{Client: redistest.NewClient(t, addr), mark: name}
	c, err := interlock.New(cc)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })

	type acquirer interface {
		Lock(ctx context.Context) error
		LockLease(ctx context.Context, lease time.Duration) error
		TryLock(ctx context.Context, wait, lease time.Duration) (bool, error)
	}
	lockOps := func(l acquirer) map[string]func(ctx context.Context) error {
		return map[string]func(ctx context.Context) error{
			"Lock":         l.Lock,
			"LockLease":    func(ctx context.Context) error { return l.LockLease(ctx, time.Minute) },
			"TryLock":      func(ctx context.Context) error { return second(l.TryLock(ctx, 0, 0)) },
			"TryLock wait": func(ctx context.Context) error { return second(l.TryLock(ctx, time.Second, 0)) },
		}
	}
	kinds := map[string]map[string]func(ctx context.Context) error{
		"rlock":             lockOps(rlock.New(c, name)),
		"fairlock":          lockOps(fairlock.New(c, name)),
		"rwlock read":       lockOps(rwlock.New(c, name).Read()),
		"rwlock write":      lockOps(rwlock.New(c, name).Write()),
		"fenced":            lockOps(fenced.New(c, name)),
		"nonreentrant":      lockOps(nonreentrant.New(c, name)),
		"nonreentrant fair": lockOps(nonreentrant.NewFair(c, name)),
		"spin":              lockOps(spin.New(c, name)),
		"multilock":         lockOps(multilock.New(rlock.New(c, name), rlock.New(c, name+":2"))),
	}
	f := fenced.New(c, name)
	kinds["fenced"]["LockToken"] = func(ctx context.Context) error { return second(f.LockToken(ctx)) }
	kinds["fenced"]["TryLockToken"] = func(ctx context.Context) error {
		_, _, err := f.TryLockToken(ctx, 0, 0)
		return err
	}
	s := semaphore.New(c, name)
	kinds["semaphore"] = map[string]func(ctx context.Context) error{
		"Acquire":         func(ctx context.Context) error { return s.Acquire(ctx, 1) },
		"TryAcquire":      func(ctx context.Context) error { return second(s.TryAcquire(ctx, 1, 0)) },
		"TryAcquire wait": func(ctx context.Context) error { return second(s.TryAcquire(ctx, 1, time.Second)) },
	}
	e := semaphore.NewExpirable(c, name)
	kinds["expirable"] = map[string]func(ctx context.Context) error{
		"Acquire": func(ctx context.Context) error { return second(e.Acquire(ctx, 1, 0)) },
		"TryAcquire": func(ctx context.Context) error {
			_, _, err := e.TryAcquire(ctx, 1, 0, 0)
			return err
		},
	}
	kinds["latch"] = map[string]func(ctx context.Context) error{"Await": latch.New(c, name).Await}

	for kind, ops := range kinds {
		for op, run := range ops {
			for how, ctx := range doneContexts(context.Background()) {
				before := cc.n.Load()
				err := run(ctx)
				assert.ErrorIs(t, err, ctx.Err(), "%s %s, %s", kind, op, how)
				assert.Equal(t, before, cc.n.Load(), "%s %s, %s: commands sent", kind, op, how)
			}
		}
	}
	assert.Zero(t, c.Stats().Holds)
	assert.Zero(t, c.Stats().UndoQueue, "nothing to take back")
}

// A release whose caller's context has ended (a deferred Unlock of a
// request that is done) still releases: the key is gone, the permit back.
func TestReleaseWithEndedContextReleases(t *testing.T) {
	c := newClient(t)
	rc := redistest.NewClient(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	exists := func(key string) bool {
		n, err := rc.Do(ctx, rc.B().Exists().Key(key).Build()).AsInt64()
		require.NoError(t, err)
		return n == 1
	}
	for how := range doneContexts(ctx) {
		t.Run(how, func(t *testing.T) {
			done := func() context.Context { return doneContexts(ctx)[how] }
			name := "edges:" + strings.ReplaceAll(t.Name(), " ", "_")
			locks := map[string]interlock.Locker{
				"rlock":             rlock.New(c, name+":rlock"),
				"fairlock":          fairlock.New(c, name+":fair"),
				"rwlock read":       rwlock.New(c, name+":rwr").Read(),
				"rwlock write":      rwlock.New(c, name+":rww").Write(),
				"fenced":            fenced.New(c, name+":fenced"),
				"nonreentrant":      nonreentrant.New(c, name+":nr"),
				"nonreentrant fair": nonreentrant.NewFair(c, name+":nrf"),
				"spin":              spin.New(c, name+":spin"),
			}
			for kind, l := range locks {
				require.NoError(t, l.Lock(ctx), kind)
				require.True(t, exists(l.Name()), kind)
				assert.NoError(t, l.Unlock(done()), kind)
				assert.False(t, exists(l.Name()), "%s: released", kind)
			}

			a, b := rlock.New(c, name+":ma"), rlock.New(c, name+":mb")
			m := multilock.New(a, b)
			require.NoError(t, m.Lock(ctx))
			assert.NoError(t, m.Unlock(done()), "multilock")
			assert.False(t, exists(a.Name()) || exists(b.Name()), "multilock: released")
			assert.Zero(t, c.Stats().Holds)

			s := semaphore.New(c, name+":sem")
			require.NoError(t, s.AddPermits(ctx, 1))
			require.NoError(t, s.Acquire(ctx, 1))
			assert.NoError(t, s.Release(done(), 1), "Release")
			ok, err := s.ReleaseIfExists(done(), 1)
			assert.NoError(t, err, "ReleaseIfExists")
			assert.True(t, ok, "ReleaseIfExists")
			assert.Equal(t, int64(2), must(s.Available(ctx)))

			e := semaphore.NewExpirable(c, name+":pes")
			require.NoError(t, e.AddPermits(ctx, 2))
			ids, err := e.Acquire(ctx, 2, 0)
			require.NoError(t, err)
			assert.NoError(t, e.Release(done(), ids[0]), "expirable Release")
			ok, err = e.TryRelease(done(), ids[1])
			assert.NoError(t, err, "expirable TryRelease")
			assert.True(t, ok, "expirable TryRelease")
			assert.Equal(t, int64(0), must(e.Acquired(ctx)))
			assert.Zero(t, c.Stats().Holds)

			l := latch.New(c, name+":latch")
			require.True(t, must(l.TrySetCount(ctx, 1)))
			assert.NoError(t, l.CountDown(done()), "CountDown")
			assert.Zero(t, must(l.Count(ctx)), "the latch is open")
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// An Unlock from a goroutine that did not lock, while the Client holds the
// lock for the goroutine that did, names that owner and the ways out, and
// the Observer hears it; WithLogger warns of it.
func TestUnlockFromAnotherGoroutine(t *testing.T) {
	var (
		mu     sync.Mutex
		events []interlock.Event
	)
	var logs syncBuffer
	c := newClient(t, interlock.WithObserver(interlock.ObserverFunc(func(_ context.Context, e interlock.Event) {
		mu.Lock()
		defer mu.Unlock()
		if e.Op == interlock.OpRelease {
			events = append(events, e)
		}
	})), interlock.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := rlock.New(c, "edges:"+t.Name())
	require.NoError(t, m.Lock(ctx))
	holder := must(interlock.OwnerID(ctx))

	var err error
	var caller int64
	var wg sync.WaitGroup
	wg.Go(func() {
		caller = must(interlock.OwnerID(ctx))
		err = m.Unlock(ctx)
	})
	wg.Wait()
	require.ErrorIs(t, err, interlock.ErrNotHeld)
	var ie *interlock.Error
	require.True(t, errors.As(err, &ie))
	assert.Contains(t, err.Error(), fmt.Sprintf("owner %d holds nothing, but this Client holds the lock for owner %d", caller, holder))
	assert.Contains(t, err.Error(), "unlock from the goroutine that locked, or lock with interlock.Lock and release the Hold it returns, or lock and unlock with interlock.WithOwner(ctx, id)")
	mu.Lock()
	require.NotEmpty(t, events)
	last := events[len(events)-1]
	mu.Unlock()
	assert.Equal(t, interlock.OutcomeNotHeld, last.Outcome)
	assert.Equal(t, err, last.Err)
	assert.Contains(t, logs.String(), "Unlock by an owner that holds nothing")
	assert.Contains(t, logs.String(), m.Name())

	held, err := m.IsHeld(ctx)
	require.NoError(t, err)
	assert.True(t, held, "the owner still holds it")
	require.NoError(t, m.Unlock(ctx))
}

// Dedicate dedicates a connection whose renewal rounds and latch sweeps
// go through countingClient's DoMulti (redistest.Aside).
func (c *countingClient) Dedicate() (rueidis.DedicatedClient, func()) {
	dc, release := c.Client.Dedicate()
	return redistest.Aside(dc, c.DoMulti), release
}
