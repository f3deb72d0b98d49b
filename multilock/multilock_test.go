package multilock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/fenced"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/multilock"
	"github.com/interlock-go/interlock/nonreentrant"
	"github.com/interlock-go/interlock/rlock"
	"github.com/interlock-go/interlock/rwlock"
	"github.com/interlock-go/interlock/spin"
)

func TestBadInputIsRefusedBeforeSending(t *testing.T) {
	ctx := redistest.Context(t)
	c, rc := newClient(t)
	c2, _ := newClient(t)
	c3, _ := newClient(t)
	n := names(t, 3)
	a, b := rlock.New(c, n[0]), rlock.New(c, n[1])
	var nilLock *rlock.Mutex
	for what, m := range map[string]*multilock.Mutex{
		"no members":            multilock.New(),
		"a nil member":          multilock.New(a, nil),
		"a nil pointer":         multilock.New(a, nilLock),
		"a member twice":        multilock.New(a, b, rlock.New(c, n[0])),
		"one key, two kinds":    multilock.New(a, nonreentrant.New(c, n[0])),
		"a RedLock of two":      multilock.NewRedLock(rlock.New(c, n[0]), rlock.New(c2, n[1])),
		"a RedLock, one Client": multilock.NewRedLock(rlock.New(c, n[0]), rlock.New(c2, n[1]), rlock.New(c2, n[2])),
		"an empty RedLock":      multilock.NewRedLock(),
	} {
		assert.ErrorIs(t, m.Lock(ctx), interlock.ErrInvalid, what)
		_, err := m.TryLock(ctx, 0, 0)
		assert.ErrorIs(t, err, interlock.ErrInvalid, what)
		assert.ErrorIs(t, m.Unlock(ctx), interlock.ErrInvalid, what)
		assert.ErrorIs(t, context.Cause(m.Guard(ctx)), interlock.ErrInvalid, what)
		assert.Zero(t, m.Remaining(ctx), what)
	}
	m := multilock.New(a, b)
	assert.ErrorIs(t, m.LockLease(ctx, 0), interlock.ErrInvalid)
	assert.ErrorIs(t, second(m.TryLock(ctx, -time.Second, 0)), interlock.ErrInvalid)
	assert.ErrorIs(t, second(m.TryLock(ctx, 0, time.Microsecond)), interlock.ErrInvalid)
	// Same names on another Client are other locks to this process, and a
	// RedLock of three Clients is fine.
	require.NoError(t, multilock.NewRedLock(rlock.New(c, n[0]), rlock.New(c2, n[1]), rlock.New(c3, n[2])).Lock(ctx))
	require.NoError(t, multilock.NewRedLock(rlock.New(c, n[0]), rlock.New(c2, n[1]), rlock.New(c3, n[2])).Unlock(ctx))
	for _, k := range n {
		assert.EqualValues(t, -2, redistest.PTTL(t, rc, k), "nothing left on %s", k)
	}
}

func second[T any](_ T, err error) error { return err }

// members returns one lock of each kind on c over names.
func members(c *interlock.Client, n []string) []interlock.Locker {
	return []interlock.Locker{
		rlock.New(c, n[0]),
		fairlock.New(c, n[1]),
		rwlock.New(c, n[2]).Write(),
		fenced.New(c, n[3]),
		nonreentrant.New(c, n[4]),
		spin.New(c, n[5]),
	}
}

func TestHoldsEveryMemberOfAnyKind(t *testing.T) {
	ctx := redistest.Context(t)
	c, rc := newClient(t)
	n := names(t, 6)
	m := multilock.New(members(c, n)...)
	require.NoError(t, m.Lock(ctx))
	assert.True(t, redistest.Must[bool](t)(m.IsHeld(ctx)))
	for _, member := range m.Members() {
		assert.True(t, redistest.Must[bool](t)(member.IsHeld(ctx)), member.Name())
		assert.InDelta(t, 30000, redistest.PTTL(t, rc, member.Name()), 2000, "a watchdog hold: %s", member.Name())
	}
	assert.Equal(t, 6, c.Stats().Holds, "every member rides the Client's one watchdog")
	assert.InDelta(t, 30*time.Second, m.Remaining(ctx), float64(2*time.Second))

	// Another owner gets none of them.
	other := interlock.WithOwner(ctx, interlock.NewOwnerID())
	assert.False(t, redistest.Must[bool](t)(m.TryLock(other, 0, 0)))
	assert.False(t, redistest.Must[bool](t)(m.TryLock(other, 300*time.Millisecond, time.Second)))
	assert.False(t, redistest.Must[bool](t)(m.IsHeld(other)))

	g := m.Guard(ctx)
	require.NoError(t, m.Unlock(ctx))
	<-g.Done()
	assert.ErrorIs(t, context.Cause(g), context.Canceled)
	for _, k := range n {
		assert.EqualValues(t, -2, redistest.PTTL(t, rc, k), "%s released", k)
	}
	assert.Zero(t, c.Stats().Holds)
	assert.ErrorIs(t, m.Unlock(ctx), interlock.ErrNotHeld)

	// The other owner now gets them all.
	require.True(t, redistest.Must[bool](t)(m.TryLock(other, 0, 0)))
	require.NoError(t, m.Unlock(other))
}

func TestABusyMemberLeavesNothingHeld(t *testing.T) {
	ctx := redistest.Context(t)
	c, rc := newClient(t)
	n := names(t, 3)
	busy := rlock.New(c, n[2])
	other := interlock.WithOwner(ctx, interlock.NewOwnerID())
	require.NoError(t, busy.Lock(other))
	m := multilock.New(rlock.New(c, n[0]), rlock.New(c, n[1]), rlock.New(c, n[2]))

	start := time.Now()
	ok, err := m.TryLock(ctx, 400*time.Millisecond, 0)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.GreaterOrEqual(t, time.Since(start), 350*time.Millisecond, "the last member waited for what was left")
	assert.EqualValues(t, -2, redistest.PTTL(t, rc, n[0]))
	assert.EqualValues(t, -2, redistest.PTTL(t, rc, n[1]))
	assert.Equal(t, 1, c.Stats().Holds, "only the other owner's hold")

	// A Lock waits for the busy member's release.
	done := make(chan error, 1)
	waiter := interlock.WithOwner(ctx, interlock.NewOwnerID())
	go func() { done <- m.Lock(waiter) }()
	time.Sleep(200 * time.Millisecond)
	require.NoError(t, busy.Unlock(other))
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Lock was not woken by the release")
	}
	require.NoError(t, m.Unlock(waiter))

	// An ended context leaves nothing held either.
	require.NoError(t, busy.Lock(other))
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, m.Lock(cctx), context.DeadlineExceeded)
	assert.EqualValues(t, -2, redistest.PTTL(t, rc, n[0]))
	assert.EqualValues(t, -2, redistest.PTTL(t, rc, n[1]))
	require.NoError(t, busy.Unlock(other))
}

func TestLeaseIsGivenOnceAllAreHeld(t *testing.T) {
	ctx := redistest.Context(t)
	c, rc := newClient(t)
	n := names(t, 3)
	m := multilock.New(rlock.New(c, n[0]), fairlock.New(c, n[1]), rwlock.New(c, n[2]).Read())
	require.True(t, redistest.Must[bool](t)(m.TryLock(ctx, 10*time.Second, 3*time.Second)))
	for _, k := range n {
		assert.InDelta(t, 3000, redistest.PTTL(t, rc, k), 300, "%s leased 3s, not the gathering's 20s", k)
	}
	assert.InDelta(t, 3*time.Second, m.Remaining(ctx), float64(300*time.Millisecond))
	g := m.Guard(ctx)
	select {
	case <-g.Done():
		assert.ErrorIs(t, context.Cause(g), interlock.ErrLockLost)
	case <-time.After(6 * time.Second):
		t.Fatal("the guard outlived the lease")
	}
	// The guard ends a lease after the request that set it was sent; the
	// server, a lease after it ran it.
	assert.Eventually(t, func() bool { return !redistest.Must[bool](t)(m.IsHeld(ctx)) }, 200*time.Millisecond, 2*time.Millisecond)

	require.NoError(t, m.LockLease(ctx, 2*time.Second))
	for _, k := range n {
		assert.InDelta(t, 2000, redistest.PTTL(t, rc, k), 300, k)
	}
	require.NoError(t, m.Unlock(ctx))
}

func TestGuardEndsWithAnyMember(t *testing.T) {
	ctx := redistest.Context(t)
	c, _ := newClient(t)
	n := names(t, 3)
	a := rlock.New(c, n[1])
	m := multilock.New(rlock.New(c, n[0]), a, rlock.New(c, n[2]))
	require.NoError(t, m.Lock(ctx))
	g := m.Guard(ctx)
	require.True(t, redistest.Must[bool](t)(a.ForceUnlock(ctx)))
	select {
	case <-g.Done():
	default:
		t.Fatal("a lost member ends the guard by the time ForceUnlock returns")
	}
	assert.ErrorIs(t, context.Cause(g), interlock.ErrLockLost)
	err := m.Unlock(ctx)
	assert.ErrorIs(t, err, interlock.ErrNotHeld, "the lost member")
	assert.Zero(t, c.Stats().Holds, "the others were still released")

	assert.ErrorIs(t, context.Cause(m.Guard(ctx)), interlock.ErrNotHeld)
}

func TestReentry(t *testing.T) {
	ctx := redistest.Context(t)
	c, rc := newClient(t)
	n := names(t, 2)
	m := multilock.New(rlock.New(c, n[0]), rlock.New(c, n[1]))
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Unlock(ctx))
	assert.True(t, redistest.Must[bool](t)(m.IsHeld(ctx)))
	require.NoError(t, m.Unlock(ctx))
	assert.EqualValues(t, -2, redistest.PTTL(t, rc, n[0]))

	// A non-reentrant member fails at once, and takes back the others.
	nr := multilock.New(rlock.New(c, n[0]), nonreentrant.New(c, n[1]))
	require.NoError(t, nr.Lock(ctx))
	assert.ErrorIs(t, nr.Lock(ctx), nonreentrant.ErrReentered)
	require.NoError(t, nr.Unlock(ctx))
	assert.EqualValues(t, -2, redistest.PTTL(t, rc, n[0]))
}

// redLock returns a RedLock over one lock on each of three new servers.
func redLock(t *testing.T, name string) (*multilock.Mutex, []*redistest.Server) {
	var servers []*redistest.Server
	var locks []interlock.Locker
	for range 3 {
		s := redistest.Standalone(t)
		c := wrap(t, redistest.NewClient(t, s.Addr()))
		servers = append(servers, s)
		locks = append(locks, rlock.New(c, name))
	}
	return multilock.NewRedLock(locks...), servers
}

func TestRedLockNeedsAMajority(t *testing.T) {
	ctx := redistest.Context(t)
	name := names(t, 1)[0]
	m, servers := redLock(t, name)
	require.True(t, redistest.Must[bool](t)(m.TryLock(ctx, time.Second, 0)))
	require.NoError(t, m.Unlock(ctx))

	// One master frozen: the others make a majority within the wait.
	require.NoError(t, servers[1].Pause())
	start := time.Now()
	ok, err := m.TryLock(ctx, 1500*time.Millisecond, 0)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Less(t, time.Since(start), 3*time.Second)
	assert.True(t, redistest.Must[bool](t)(m.IsHeld(ctx)))
	assert.Positive(t, m.Remaining(ctx))
	g := m.Guard(ctx)
	assert.NoError(t, g.Err(), "a minority not held leaves the guard on")
	require.NoError(t, m.Unlock(ctx))
	<-g.Done()
	require.NoError(t, servers[1].Resume())

	// Two masters down: it fails and leaves nothing held on the third.
	require.NoError(t, servers[0].Kill())
	require.NoError(t, servers[2].Kill())
	ok, err = m.TryLock(ctx, time.Second, 0)
	assert.False(t, ok)
	assert.Error(t, err, "the members' errors say why")
	rc := redistest.NewClient(t, servers[1].Addr())
	assert.EqualValues(t, -2, redistest.PTTL(t, rc, name))
}
