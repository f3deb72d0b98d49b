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

// afterTry is an rlock that runs after once its TryLock has acquired.
type afterTry struct {
	*rlock.Mutex
	after func()
}

func (a *afterTry) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	ok, err := a.Mutex.TryLock(ctx, wait, lease)
	if ok {
		a.after()
	}
	return ok, err
}

// A gathering whose lease cannot be given to every member gives back each
// member it took once: with the first member lost and the last one failing,
// an outer hold of the middle one stays.
func TestAFailedReletGivesBackEachMemberOnce(t *testing.T) {
	ctx := interlock.WithOwner(redistest.Context(t), 5)
	c, rc := newClient(t)
	n := names(t, 3)
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	first, middle := rlock.New(c, n[0]), rlock.New(c, n[1])
	last := &afterTry{Mutex: rlock.New(c, n[2]), after: func() {
		_, _ = first.ForceUnlock(ctx) // lost before the lease is given
		cancel()                      // the last member's lease fails
	}}
	require.NoError(t, middle.Lock(ctx))
	m := multilock.New(first, middle, last)

	// No wait: the members are taken with the lease itself, so that the
	// re-entered middle member keeps its count and TTL through the test.
	ok, err := m.TryLock(tctx, 0, 10*time.Second)
	assert.False(t, ok)
	assert.ErrorIs(t, err, context.Canceled)
	held, err := middle.IsHeld(ctx)
	require.NoError(t, err)
	assert.True(t, held, "the outer hold of the middle member")
	assert.Equal(t, 1, redistest.Must[int](t)(middle.HoldCount(ctx)))
	require.NoError(t, middle.Unlock(ctx))
	assert.EqualValues(t, -2, redistest.PTTL(t, rc, n[2]), "the last member given back")
}
