package fenced_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fenced"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/script"
	"github.com/interlock-go/interlock/lua"
)

// TestTokenSequence is Redisson's testTokenIncrease: the token goes up by
// one with every acquisition, whichever method acquires, and survives
// unlocks.
func TestTokenSequence(t *testing.T) {
	c, rc := newClient(t)
	ctx := redistest.Context(t)
	m := fenced.New(c, lockName(t))
	token := func() uint64 {
		t.Helper()
		n, err := m.Token(ctx)
		require.NoError(t, err)
		return n
	}
	assert.Zero(t, token(), "no token handed out yet")

	got, err := m.LockToken(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), got)
	require.NoError(t, m.Unlock(ctx))

	got, err = m.LockToken(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(2), got)
	require.NoError(t, m.Unlock(ctx))

	require.NoError(t, m.Lock(ctx))
	assert.Equal(t, uint64(3), token())
	require.NoError(t, m.Unlock(ctx))

	require.NoError(t, m.LockLease(ctx, 10*time.Second))
	assert.Equal(t, uint64(4), token())
	require.NoError(t, m.Unlock(ctx))

	got, ok, err := m.TryLockToken(ctx, time.Second, 0)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, uint64(5), got)
	assert.Equal(t, uint64(5), token())
	require.NoError(t, m.Unlock(ctx))

	// The counter is a plain integer string with no TTL.
	pttl, err := rc.Do(ctx, rc.B().Pttl().Key(tokenKey(m.Name())).Build()).AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(-1), pttl)
	locked, err := m.IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked)
}

// TestTokensAcrossOwners: tokens strictly increase across owners and
// clients; re-entry takes a token; a failed attempt does not; the counter
// survives lease expiry and ForceUnlock.
func TestTokensAcrossOwners(t *testing.T) {
	a, _ := newClient(t)
	b, _ := newClient(t)
	ctx := redistest.Context(t)
	name := lockName(t)
	ma, mb := fenced.New(a, name), fenced.New(b, name)
	a1 := interlock.WithOwner(ctx, 1)
	a2 := interlock.WithOwner(ctx, 2)
	b1 := interlock.WithOwner(ctx, 1)

	var last uint64
	next := func(got uint64, what string) {
		t.Helper()
		assert.Equal(t, last+1, got, what)
		last = got
	}
	tok, err := ma.LockToken(a1)
	require.NoError(t, err)
	next(tok, "A:1 lock")
	tok, ok, err := ma.TryLockToken(a1, 0, 0)
	require.NoError(t, err)
	require.True(t, ok)
	next(tok, "A:1 re-entry")
	n, err := ma.HoldCount(a1)
	require.NoError(t, err)
	assert.Equal(t, 2, n)

	// Other owners fail, and take no token.
	for _, other := range []context.Context{a2, b1} {
		m := ma
		if other == b1 {
			m = mb
		}
		tok, ok, err = m.TryLockToken(other, 0, 0)
		require.NoError(t, err)
		assert.False(t, ok)
		assert.Zero(t, tok)
		tok, ok, err = m.TryLockToken(other, 30*time.Millisecond, time.Second)
		require.NoError(t, err)
		assert.False(t, ok)
		assert.Zero(t, tok)
	}
	current, err := mb.Token(b1)
	require.NoError(t, err)
	assert.Equal(t, last, current, "failed attempts took tokens")

	require.NoError(t, ma.Unlock(a1))
	require.NoError(t, ma.Unlock(a1))
	tok, err = mb.LockLeaseToken(b1, 50*time.Millisecond)
	require.NoError(t, err)
	next(tok, "B:1 lock with lease")
	// The lease runs out; the counter does not.
	redistest.Eventually(t, 2*time.Second, func() bool {
		locked, err := mb.IsLocked(b1)
		return err == nil && !locked
	}, "the lease did not end")
	tok, err = ma.LockToken(a2)
	require.NoError(t, err)
	next(tok, "A:2 after B's lease expired")
	forced, err := mb.ForceUnlock(b1)
	require.NoError(t, err)
	assert.True(t, forced)
	tok, ok, err = mb.TryLockToken(b1, 0, time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	next(tok, "B:1 after force unlock")
	require.NoError(t, mb.Unlock(b1))
}

func TestReentrancyAndExclusion(t *testing.T) {
	c, _ := newClient(t)
	ctx := redistest.Context(t)
	m := fenced.New(c, lockName(t))
	other := interlock.WithOwner(ctx, interlock.NewOwnerID())
	count := func() int {
		t.Helper()
		n, err := m.HoldCount(ctx)
		require.NoError(t, err)
		return n
	}
	excluded := func() bool {
		t.Helper()
		ok, err := m.TryLock(other, 0, 0)
		require.NoError(t, err)
		return !ok
	}

	held, err := m.IsHeld(ctx)
	require.NoError(t, err)
	assert.False(t, held)
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Lock(ctx))
	assert.Equal(t, 2, count())
	held, err = m.IsHeld(ctx)
	require.NoError(t, err)
	assert.True(t, held)
	assert.True(t, excluded())
	assert.ErrorIs(t, m.Unlock(other), interlock.ErrNotHeld)
	require.NoError(t, m.Unlock(ctx))
	assert.Equal(t, 1, count())
	assert.True(t, excluded())
	require.NoError(t, m.Unlock(ctx))
	assert.Equal(t, 0, count())
	assert.False(t, excluded(), "another owner acquires after the last unlock")
	require.NoError(t, m.Unlock(other))
	assert.ErrorIs(t, m.Unlock(ctx), interlock.ErrNotHeld)
}

// TestLeaseIsHonoured: unlike Redisson's lockAndGetToken(lease), the lease
// variants set the lease, and their guard ends with it.
func TestLeaseIsHonoured(t *testing.T) {
	c, _ := newClient(t)
	ctx := redistest.Context(t)
	m := fenced.New(c, lockName(t))

	_, err := m.LockLeaseToken(ctx, 10*time.Second)
	require.NoError(t, err)
	ttl, err := m.TTL(ctx)
	require.NoError(t, err)
	assert.True(t, ttl > 8*time.Second && ttl <= 10*time.Second, "TTL %v after a 10s lease", ttl)
	require.NoError(t, m.Unlock(ctx))

	_, ok, err := m.TryLockToken(ctx, 0, time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	ttl, err = m.TTL(ctx)
	require.NoError(t, err)
	assert.True(t, ttl > 0 && ttl <= time.Second, "TTL %v after a 1s lease", ttl)
	guard := m.Guard(ctx)
	select {
	case <-guard.Done():
	case <-time.After(3 * time.Second):
		t.Fatal("the guard outlived the lease")
	}
	assert.ErrorIs(t, context.Cause(guard), interlock.ErrLockLost)
	redistest.Eventually(t, 2*time.Second, func() bool {
		locked, err := m.IsLocked(ctx)
		return err == nil && !locked
	}, "the lease did not end on the server")
	assert.ErrorIs(t, m.Unlock(ctx), interlock.ErrNotHeld)

	// A watchdog hold gets the watchdog timeout.
	_, err = m.LockToken(ctx)
	require.NoError(t, err)
	ttl, err = m.TTL(ctx)
	require.NoError(t, err)
	assert.InDelta(t, float64(interlock.DefaultWatchdogTimeout), float64(ttl), float64(2*time.Second))
	require.NoError(t, m.Unlock(ctx))
}

func TestGuardReportsDeletedKey(t *testing.T) {
	// A watchdog timeout of 1s: held until the key is deleted, however
	// late a loaded machine runs the renewals.
	c, rc := newClient(t, interlock.WithWatchdogTimeout(time.Second))
	ctx := redistest.Context(t)
	m := fenced.New(c, lockName(t))
	_, err := m.LockToken(ctx)
	require.NoError(t, err)
	guard := m.Guard(ctx)
	require.NoError(t, guard.Err())

	require.NoError(t, rc.Do(ctx, rc.B().Del().Key(m.Name()).Build()).Error())
	select {
	case <-guard.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("guard not cancelled")
	}
	assert.ErrorIs(t, context.Cause(guard), interlock.ErrLockLost)
	assert.ErrorIs(t, m.Unlock(ctx), interlock.ErrNotHeld)
	assert.ErrorIs(t, context.Cause(m.Guard(ctx)), interlock.ErrNotHeld)
}

func TestWatchdogKeepsTheLock(t *testing.T) {
	// Renewals every 500ms, each with a second to spare for a loaded
	// machine.
	const watchdog = 1500 * time.Millisecond
	c, _ := newClient(t, interlock.WithWatchdogTimeout(watchdog))
	ctx := redistest.Context(t)
	m := fenced.New(c, lockName(t))
	_, err := m.LockToken(ctx)
	require.NoError(t, err)
	guard := m.Guard(ctx)
	time.Sleep(4 * watchdog / 3) // past the lease
	require.NoError(t, guard.Err(), "lost while renewed")
	held, err := m.IsHeld(ctx)
	require.NoError(t, err)
	assert.True(t, held)
	require.NoError(t, m.Unlock(ctx))
	<-guard.Done()
	assert.ErrorIs(t, context.Cause(guard), context.Canceled, "a release is not a loss")
}

func TestWaiterIsWokenAndGetsANewerToken(t *testing.T) {
	c, _ := newClient(t)
	ctx := redistest.Context(t)
	m := fenced.New(c, lockName(t))
	holder := interlock.WithOwner(ctx, interlock.NewOwnerID())
	first, err := m.LockToken(holder)
	require.NoError(t, err)

	go func() {
		time.Sleep(100 * time.Millisecond)
		assert.NoError(t, m.Unlock(holder))
	}()
	start := time.Now()
	second, ok, err := m.TryLockToken(ctx, 10*time.Second, 0)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Less(t, time.Since(start), 5*time.Second, "woken by the release message, not by the 30s TTL")
	assert.Greater(t, second, first)
	require.NoError(t, m.Unlock(ctx))
	redistest.Eventually(t, 2*time.Second, func() bool { return c.Stats().Channels == 0 }, "subscriptions left behind")
}

func TestCancelWhileWaiting(t *testing.T) {
	c, _ := newClient(t)
	ctx := redistest.Context(t)
	m := fenced.New(c, lockName(t))
	holder := interlock.WithOwner(ctx, interlock.NewOwnerID())
	tok, err := m.LockToken(holder)
	require.NoError(t, err)

	wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	got, err := m.LockToken(wctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Zero(t, got)
	got, ok, err := m.TryLockToken(wctx, time.Second, 0)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.False(t, ok)
	assert.Zero(t, got)
	current, err := m.Token(ctx)
	require.NoError(t, err)
	assert.Equal(t, tok, current, "waiters took tokens")
	require.NoError(t, m.Unlock(holder))
}

// TestLostAcquireReply: when the reply to an acquisition is lost, the hold
// it took is released, and its token stays used.
func TestLostAcquireReply(t *testing.T) {
	ctx := redistest.Context(t)
	var lose atomic.Bool
	var caller atomic.Pointer[context.Context] // the deadline the reply outlasts
	f := &redistest.Hooked{Client: redistest.NewClient(t, addr)}
	f.Set(func(cctx context.Context, cmd rueidis.Completed, next func() rueidis.RedisResult) rueidis.RedisResult {
		if !lose.Load() || !runs(cmd, script.FencedAcquire()) {
			return next()
		}
		if res := next(); script.IsNoScript(res.Error()) { // the script runs on the server ...
			return res
		}
		lctx := *caller.Load()
		<-lctx.Done()
		return rueidis.NewErrorResult(lctx.Err()) // ... and its reply is lost to the caller's deadline
	})
	// Loaded scripts: the hook loses the reply of an EVALSHA that ran.
	require.NoError(t, lua.Preload(ctx, f.Client))
	c := wrap(t, f)
	m := fenced.New(c, lockName(t))
	lost := func() {
		t.Helper()
		lose.Store(true)
		lctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		caller.Store(&lctx)
		tok, err := m.LockToken(lctx)
		lose.Store(false)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Zero(t, tok)
	}
	token := func() uint64 {
		t.Helper()
		n, err := m.Token(ctx)
		require.NoError(t, err)
		return n
	}

	// The Client takes a lost acquisition back on its own, soon after the
	// caller gave up.
	lost()
	assert.Eventually(t, func() bool {
		locked, err := m.IsLocked(ctx)
		return err == nil && !locked
	}, 5*time.Second, 5*time.Millisecond, "a lost first acquisition is released")
	assert.Equal(t, uint64(1), token(), "its token is skipped")

	tok, err := m.LockToken(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(2), tok)
	lost() // a lost re-entry takes back only the hold it added
	// HoldCount counts the holds of this goroutine's owner: polled here,
	// not in assert.Eventually's goroutine.
	n, err := m.HoldCount(ctx)
	for end := time.Now().Add(5 * time.Second); err == nil && n != 1 && time.Now().Before(end); n, err = m.HoldCount(ctx) {
		time.Sleep(5 * time.Millisecond)
	}
	require.NoError(t, err)
	assert.Equal(t, 1, n, "a lost re-entry is taken back")
	assert.Equal(t, uint64(3), token())
	require.NoError(t, m.Unlock(ctx))
	locked, err := m.IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked)
}

// TestForeignState: keys written by someone other than a lock client give
// errors or waits, never a hold with an unusable token.
func TestForeignState(t *testing.T) {
	c, rc := newClient(t)
	ctx := redistest.Context(t)
	name := lockName(t)
	m := fenced.New(c, name)
	set := func(args ...string) {
		t.Helper()
		require.NoError(t, rc.Do(ctx, rc.B().Arbitrary(args...).Build()).Error())
	}
	nothingHeld := func() {
		t.Helper()
		locked, err := m.IsLocked(ctx)
		require.NoError(t, err)
		assert.False(t, locked)
		assert.Zero(t, c.Stats().Holds)
	}

	// A counter overwritten with a negative number: the token would be
	// below 1, so the hold is given back and the acquisition fails.
	set("SET", tokenKey(name), "-10")
	tok, err := m.LockToken(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "token -9")
	assert.Zero(t, tok)
	nothingHeld()
	// -2 makes the reply {-1, -1}, which also means "busy, no TTL".
	set("SET", tokenKey(name), "-2")
	_, err = m.LockToken(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "token -1")
	nothingHeld()
	_, err = m.Token(ctx)
	assert.Error(t, err)

	// A counter that is not a number: Redis refuses the INCR, before the
	// script changes anything, and every call that reads the lock's keys
	// names the counter.
	set("SET", tokenKey(name), "abc")
	_, err = m.LockToken(ctx)
	require.ErrorIs(t, err, interlock.ErrInvalid)
	assert.Contains(t, err.Error(), tokenKey(name)+` holds another type of data: the string "abc"`)
	n, err := rc.Do(ctx, rc.B().Exists().Key(name).Build()).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, n, "no hold taken")
	assert.Zero(t, c.Stats().Holds)
	_, err = m.IsLocked(ctx)
	assert.ErrorIs(t, err, interlock.ErrInvalid)
	_, err = m.Token(ctx)
	assert.ErrorIs(t, err, interlock.ErrInvalid)

	// A lock hash with no TTL held by someone else: {-1, -1} means busy, and
	// the waiter waits (for a message or its deadline) instead of failing.
	set("DEL", tokenKey(name))
	set("HSET", name, "someone:1", "1")
	tok, ok, err := m.TryLockToken(ctx, 100*time.Millisecond, 0)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Zero(t, tok)
	ttl, err := m.TTL(ctx)
	require.NoError(t, err)
	assert.Negative(t, ttl)
	current, err := m.Token(ctx)
	require.NoError(t, err)
	assert.Zero(t, current, "a busy attempt took a token")
	forced, err := m.ForceUnlock(ctx)
	require.NoError(t, err)
	assert.True(t, forced)
}

// TestBadTokenInputSendsNothing: the token methods and the fences refuse
// bad input with ErrInvalid before anything is sent (the common methods
// are in the conformance suite).
func TestBadTokenInputSendsNothing(t *testing.T) {
	counting := &redistest.Hooked{Client: redistest.NewClient(t, addr)}
	c := wrap(t, counting)
	ctx := redistest.Context(t)

	for _, name := range []string{"", "a{b", "{}x", "x}y"} {
		m := fenced.New(c, name)
		_, err := m.LockToken(ctx)
		assert.ErrorIs(t, err, interlock.ErrInvalid, name)
		_, err = m.LockLeaseToken(ctx, time.Second)
		assert.ErrorIs(t, err, interlock.ErrInvalid, name)
		_, _, err = m.TryLockToken(ctx, 0, 0)
		assert.ErrorIs(t, err, interlock.ErrInvalid, name)
		_, err = m.Token(ctx)
		assert.ErrorIs(t, err, interlock.ErrInvalid, name)
	}
	m := fenced.New(c, "fine")
	_, _, err := m.TryLockToken(ctx, -time.Second, 0)
	assert.ErrorIs(t, err, interlock.ErrInvalid)
	_, _, err = m.TryLockToken(ctx, 0, -time.Second)
	assert.ErrorIs(t, err, interlock.ErrInvalid)
	_, _, err = m.TryLockToken(ctx, 0, time.Microsecond)
	assert.ErrorIs(t, err, interlock.ErrInvalid)
	_, err = m.LockLeaseToken(ctx, 0)
	assert.ErrorIs(t, err, interlock.ErrInvalid)
	_, err = m.LockToken(interlock.WithOwner(ctx, -3))
	assert.ErrorIs(t, err, interlock.ErrInvalid)
	nilClient := fenced.New(nil, "x")
	_, err = nilClient.LockToken(ctx)
	assert.ErrorIs(t, err, interlock.ErrInvalid)
	_, err = nilClient.Token(ctx)
	assert.ErrorIs(t, err, interlock.ErrInvalid)

	// The resource-side fences.
	fence := fenced.NewRedisFence(counting, "fence-test:bad")
	err = fence.Set(ctx, 0, "k", "v")
	assert.ErrorIs(t, err, interlock.ErrInvalid, "token 0")
	_, err = fence.Admit(ctx, 0)
	assert.ErrorIs(t, err, interlock.ErrInvalid, "token 0")
	err = fence.Exec(ctx, 1, fenced.Write{Key: "k"})
	assert.ErrorIs(t, err, interlock.ErrInvalid, "no command")
	err = fence.Exec(ctx, 1, fenced.Write{Cmd: "SET", Args: []string{"v"}})
	assert.ErrorIs(t, err, interlock.ErrInvalid, "no key")
	err = fence.Set(ctx, 1, "fence-test:bad", "v")
	assert.ErrorIs(t, err, interlock.ErrInvalid, "the fence key itself")
	err = fence.HSet(ctx, 1, "k", "field")
	assert.ErrorIs(t, err, interlock.ErrInvalid, "odd HSET")
	for _, f := range []*fenced.RedisFence{fenced.NewRedisFence(nil, "k"), fenced.NewRedisFence(counting, "")} {
		err = f.Set(ctx, 1, "k", "v")
		assert.ErrorIs(t, err, interlock.ErrInvalid)
		_, err = f.Highest(ctx)
		assert.ErrorIs(t, err, interlock.ErrInvalid)
	}
	var inProcess fenced.Fence
	assert.False(t, inProcess.Admit(0))
	assert.ErrorIs(t, inProcess.Do(0, func() error { return nil }), interlock.ErrInvalid)
	assert.ErrorIs(t, inProcess.Do(1, nil), interlock.ErrInvalid)
	assert.Zero(t, inProcess.Highest())
	assert.Zero(t, counting.Sent(), "commands sent for bad input")
}

// TestClosedClientTokens: the token methods return ErrClosed once the
// Client is closed, and interlock.ErrClosed is interlock.ErrClosed (the
// common methods are in the conformance suite).
func TestClosedClientTokens(t *testing.T) {
	c, _ := newClient(t)
	ctx := redistest.Context(t)
	m := fenced.New(c, lockName(t))
	_, err := m.LockToken(ctx)
	require.NoError(t, err)
	guard := m.Guard(ctx)
	require.NoError(t, c.Close())
	assert.ErrorIs(t, context.Cause(guard), interlock.ErrClosed)
	_, err = m.LockToken(ctx)
	assert.ErrorIs(t, err, interlock.ErrClosed)
	_, err = m.LockLeaseToken(ctx, time.Second)
	assert.ErrorIs(t, err, interlock.ErrClosed)
	_, _, err = m.TryLockToken(ctx, 0, 0)
	assert.ErrorIs(t, err, interlock.ErrClosed)
	assert.True(t, errors.Is(interlock.ErrClosed, interlock.ErrClosed))
}
