package semaphore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/semaphore"
)

func TestSemaphoreSmoke(t *testing.T) {
	ctx := testCtx(t)
	c, rc := newClient(t)
	s := semaphore.New(c, semName(t))
	ok, err := s.TrySetPermits(ctx, 2)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, s.Acquire(ctx, 2))
	ok, err = s.TryAcquire(ctx, 1, 0)
	require.NoError(t, err)
	require.False(t, ok)
	done := make(chan error, 1)
	go func() { done <- s.Acquire(ctx, 1) }()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	require.NoError(t, s.Release(ctx, 1))
	require.NoError(t, <-done)
	t.Logf("woken in %v", time.Since(start))
	n, err := s.Available(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	v, _ := rc.Do(ctx, rc.B().Keys().Pattern("interlock_receipt*").Build()).AsStrSlice()
	t.Logf("receipts: %d", len(v))
}

func TestExpirableSmoke(t *testing.T) {
	ctx := testCtx(t)
	c, _ := newClient(t)
	e := semaphore.NewExpirable(c, semName(t))
	ok, err := e.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	require.True(t, ok)
	ids, err := e.Acquire(ctx, 1, 300*time.Millisecond)
	require.NoError(t, err)
	require.Len(t, ids, 1)
	start := time.Now()
	ids2, err := e.Acquire(ctx, 1, 0)
	require.NoError(t, err)
	t.Logf("reclaimed after %v", time.Since(start))
	left, err := e.LeaseLeft(ctx, ids2[0])
	require.NoError(t, err)
	require.Greater(t, left, 20*time.Second)
	g := e.Guard(ctx, ids2...)
	require.NoError(t, g.Err())
	require.NoError(t, e.Release(ctx, ids2...))
	require.Error(t, g.Err())
	err = e.Release(ctx, ids[0])
	require.ErrorIs(t, err, semaphore.ErrUnknownPermit)
}
