package rwlock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/rwlock"
)

// An Extend of a read hold gives the owner's timeout keys, one per hold,
// the new lease, and the hash too; beside another reader whose hold is
// longer, the hash keeps its TTL, so that reader's hold does not end early.
func TestExtendReadHolds(t *testing.T) {
	c, rc := newClient(t)
	ctx := redistest.Context(t)
	rw := rwlock.New(c, lockName(t))
	r := rw.Read()
	o, err := c.Owner(ctx)
	require.NoError(t, err)
	timeout := func(k string) string { return "{" + rw.Name() + "}:" + o + ":rwlock_timeout:" + k }
	ms := func(d time.Duration) float64 { return float64(d.Milliseconds()) }

	require.NoError(t, r.LockLease(ctx, time.Second))
	require.NoError(t, r.LockLease(ctx, time.Second))
	require.NoError(t, r.Extend(ctx, 10*time.Second))
	for _, key := range []string{rw.Name(), timeout("1"), timeout("2")} {
		assert.InDelta(t, ms(10*time.Second), redistest.PTTL(t, rc, key), 2000, key)
	}

	other := interlock.WithOwner(ctx, interlock.NewOwnerID())
	require.NoError(t, r.LockLease(other, 30*time.Second))
	require.NoError(t, r.Extend(ctx, 5*time.Second))
	assert.InDelta(t, ms(5*time.Second), redistest.PTTL(t, rc, timeout("2")), 2000)
	assert.InDelta(t, ms(30*time.Second), redistest.PTTL(t, rc, rw.Name()), 2000, "the other reader's TTL is kept")

	require.NoError(t, r.Unlock(ctx))
	require.NoError(t, r.Unlock(ctx))
	require.NoError(t, r.Unlock(other))
	assert.ErrorIs(t, r.Extend(ctx, time.Second), interlock.ErrNotHeld)
}
