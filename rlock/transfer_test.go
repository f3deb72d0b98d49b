package rlock_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/rlock"
)

// While the waiters of one Client pass a lock among themselves, a waiter
// of another Client still gets it soon: runs of transfers end with a real
// release while another process subscribes, and the first waiter of the
// handing-off Client holds off.
func TestTransfersYieldToAnotherClient(t *testing.T) {
	a, _ := newClient(t)
	b, _ := newClient(t)
	name := lockName(t)
	ctx := redistest.Context(t)
	loopCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			octx := interlock.WithOwner(loopCtx, int64(g+1))
			m := rlock.New(a, name)
			for loopCtx.Err() == nil {
				if err := m.Lock(octx); err != nil {
					return
				}
				_ = m.Unlock(octx)
			}
		})
	}
	m := rlock.New(b, name)
	var waits []time.Duration
	for range 20 {
		start := time.Now()
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := m.Lock(wctx)
		cancel()
		require.NoError(t, err, "the other Client's waiter never got the lock")
		waits = append(waits, time.Since(start))
		require.NoError(t, m.Unlock(ctx))
	}
	stop()
	wg.Wait()
	slices.Sort(waits)
	t.Logf("another Client's waits: median %v, max %v; transfers %d", waits[len(waits)/2], waits[len(waits)-1], a.Stats().Transfers)
	assert.Positive(t, a.Stats().Transfers, "the handing-off Client never transferred")
	assert.Less(t, waits[len(waits)-1], 2*time.Second)
}
