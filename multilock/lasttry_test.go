package multilock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/multilock"
	"github.com/interlock-go/interlock/rlock"
)

// lateLastTry is an rlock whose waiting TryLock, once its wait ran out
// busy, answers only after its context ended: a last try answered late,
// as on a loaded machine. A TryLock without a wait is the rlock's.
type lateLastTry struct{ *rlock.Mutex }

func (l lateLastTry) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	ok, err := l.Mutex.TryLock(ctx, wait, lease)
	if ok || err != nil || wait == 0 {
		return ok, err
	}
	<-ctx.Done()
	return false, ctx.Err()
}

// A member busy throughout its wait is busy even when its last try answers
// after the member's bound: its master answered, so the call is (false,
// nil), not a member error, and the member taken before it is given back.
func TestALateLastTryIsBusy(t *testing.T) {
	ctx := redistest.Context(t)
	c, rc := newClient(t)
	n := names(t, 2)
	busy := rlock.New(c, n[1])
	other := interlock.WithOwner(ctx, interlock.NewOwnerID())
	require.NoError(t, busy.Lock(other))
	defer func() { require.NoError(t, busy.Unlock(other)) }()
	m := multilock.New(rlock.New(c, n[0]), lateLastTry{rlock.New(c, n[1])})

	ok, err := m.TryLock(ctx, 300*time.Millisecond, 0)
	require.NoError(t, err, "a busy member, however late its last answer")
	assert.False(t, ok)
	assert.EqualValues(t, -2, redistest.PTTL(t, rc, n[0]), "the first member given back")
	assert.Equal(t, 1, c.Stats().Holds, "only the other owner's hold")
}

// A master that answers nothing fails its member within the member's wait
// and its last try's slack, with an error that says so, and the gathering
// gives back what it took.
func TestAFrozenMasterIsNoAnswer(t *testing.T) {
	redistest.RequireProcess(t)
	ctx := redistest.Context(t)
	c, rc := newClient(t)
	s := redistest.Standalone(t)
	frozen := wrap(t, redistest.NewClient(t, s.Addr()))
	t.Cleanup(func() { _ = s.Resume() }) // before the Client's Close
	n := names(t, 2)
	m := multilock.New(rlock.New(c, n[0]), rlock.New(frozen, n[1]))
	require.True(t, redistest.Must[bool](t)(m.TryLock(ctx, 0, 0)), "both masters answer before the freeze")
	require.NoError(t, m.Unlock(ctx))

	require.NoError(t, s.Pause())
	const wait = 300 * time.Millisecond
	start := time.Now()
	ok, err := m.TryLock(ctx, wait, 0)
	took := time.Since(start)
	assert.False(t, ok)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no answer within the member's wait")
	assert.GreaterOrEqual(t, took, wait, "the member's bound is its wait and more")
	// The frozen master holds the gathering for the member's wait and its
	// last try's 75 ms; how much later the call returns is a latency, with
	// headroom for a loaded machine whose wake-ups come hundreds of
	// milliseconds late.
	assert.Less(t, took, wait+75*time.Millisecond+2*time.Second)
	assert.EqualValues(t, -2, redistest.PTTL(t, rc, n[0]), "the first member given back")
	assert.Zero(t, c.Stats().Holds)
}
