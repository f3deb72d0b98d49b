package runtime_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/runtime"
)

func TestCleanupRetriesUntilDone(t *testing.T) {
	r := newRuntime(t)
	var tries atomic.Int32
	r.Cleanup("k", "o", time.Now().Add(time.Minute), func(context.Context) error {
		if tries.Add(1) < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	require.NoError(t, r.Settle(ctx, "k", "o"))
	assert.EqualValues(t, 3, tries.Load())
	// Nothing pending: Settle returns at once, even on an ended context.
	done, cancelDone := context.WithCancel(t.Context())
	cancelDone()
	assert.NoError(t, r.Settle(done, "k", "o"))
	assert.NoError(t, r.Settle(done, "other", "o"))
}

func TestCleanupRunsInOrderPerOwner(t *testing.T) {
	r := newRuntime(t)
	var order []int
	block := make(chan struct{})
	r.Cleanup("k", "o", time.Now().Add(time.Minute), func(ctx context.Context) error {
		select {
		case <-block:
			order = append(order, 1)
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	r.Cleanup("k", "o", time.Now().Add(time.Minute), func(context.Context) error {
		order = append(order, 2)
		return nil
	})
	short, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, r.Settle(short, "k", "o"), context.DeadlineExceeded)
	close(block)
	ctx, cancel2 := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel2()
	require.NoError(t, r.Settle(ctx, "k", "o"))
	assert.Equal(t, []int{1, 2}, order)
}

func TestCleanupGivesUpAtItsDeadline(t *testing.T) {
	r := newRuntime(t)
	var tries atomic.Int32
	r.Cleanup("k", "o", time.Now().Add(300*time.Millisecond), func(context.Context) error {
		tries.Add(1)
		return errors.New("never")
	})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	start := time.Now()
	require.NoError(t, r.Settle(ctx, "k", "o"))
	assert.Less(t, time.Since(start), 3*time.Second)
	assert.GreaterOrEqual(t, tries.Load(), int32(2))
}

func TestCloseFlushesCleanup(t *testing.T) {
	r := newRuntime(t)
	var tries atomic.Int32
	r.Cleanup("k", "o", time.Now().Add(time.Minute), func(context.Context) error {
		tries.Add(1)
		return errors.New("never")
	})
	go func() {
		time.Sleep(50 * time.Millisecond)
		r.Close()
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	assert.NoError(t, r.Settle(ctx, "k", "o"), "Close ends every queue")
	before := tries.Load()
	assert.GreaterOrEqual(t, before, int32(2), "tried, then tried once more by Close")
	// After Close a step gets one try at once.
	r.Cleanup("k", "o", time.Now().Add(time.Minute), func(context.Context) error {
		tries.Add(1)
		return nil
	})
	assert.Equal(t, before+1, tries.Load())
	assert.NoError(t, r.Settle(ctx, "k", "o"))
}

// A step whose try Close cuts short is not dropped: the flush tries it
// again on a fresh context before Close returns.
func TestCloseRetriesAStepItCutShort(t *testing.T) {
	r := newRuntime(t)
	started := make(chan struct{})
	var cut, done atomic.Bool
	r.Cleanup("k", "o", time.Now().Add(time.Minute), func(ctx context.Context) error {
		if cut.Load() {
			done.Store(true)
			return nil
		}
		close(started)
		<-ctx.Done()
		cut.Store(true)
		return ctx.Err()
	})
	<-started
	r.Close()
	assert.True(t, cut.Load(), "the first try was cut short by Close")
	assert.True(t, done.Load(), "Close returned without trying the step again")
}

// Once the caller's context has ended, AwaitCleanup waits only until
// CleanupGrace past its deadline, so awaiting several steps does not add
// up; a context cancelled without a deadline gets CleanupGrace from now.
func TestAwaitCleanupGraceCountsFromTheDeadline(t *testing.T) {
	r := newRuntime(t)
	stuck := func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	}
	r.Cleanup("k", "o", time.Now().Add(time.Minute), stuck)

	late, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel()
	// At once: the quickest of a few calls, so that a loaded machine
	// holding this goroutine back in one of them is no failure (latency).
	quickest := time.Hour
	for range 5 {
		start := time.Now()
		r.AwaitCleanup(late, "k", "o", time.Second)
		quickest = min(quickest, time.Since(start))
	}
	assert.Less(t, quickest, runtime.CleanupGrace, "waited although the grace after the deadline was over")

	cancelled, cancel2 := context.WithCancel(t.Context())
	cancel2()
	start := time.Now()
	r.AwaitCleanup(cancelled, "k", "o", time.Second)
	took := time.Since(start)
	assert.GreaterOrEqual(t, took, runtime.CleanupGrace)
	assert.Less(t, took, time.Second)
}
