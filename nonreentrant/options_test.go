package nonreentrant_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/nonreentrant"
)

// A wait timeout under 1ms is refused by every method, with nothing sent;
// a valid one is the queue's grace.
func TestFairWaitTimeout(t *testing.T) {
	ctx := redistest.Context(t)
	c, _ := newClient(t)

	bad := nonreentrant.NewFair(c, "nonreentrant-test:bad-wait", nonreentrant.WithWaitTimeout(time.Microsecond))
	err := bad.Lock(ctx)
	require.ErrorIs(t, err, interlock.ErrInvalid)
	assert.ErrorContains(t, err, "wait timeout 1µs must be at least 1ms")

	m := nonreentrant.NewFair(c, "nonreentrant-test:wait", nonreentrant.WithWaitTimeout(time.Minute))
	require.NoError(t, m.Lock(ctx))
	assert.ErrorIs(t, m.Lock(ctx), nonreentrant.ErrReentered)
	require.NoError(t, m.Unlock(ctx))
}
