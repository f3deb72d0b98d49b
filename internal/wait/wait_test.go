package wait_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/pubsub"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/wait"
)

var srv *redistest.Server

func TestMain(m *testing.M) {
	redistest.Main(m, func() (func(), error) {
		var err error
		if srv, err = redistest.Start(); err != nil {
			return nil, err
		}
		return srv.Stop, nil
	})
}

func setup(t *testing.T) (*pubsub.Hub, rueidis.Client) {
	rc := srv.Client(t)
	h, err := pubsub.NewHub(rc)
	require.NoError(t, err)
	t.Cleanup(h.Close)
	return h, rc
}

// lock answers "busy, retry in retry" until free is set.
type lock struct {
	free  atomic.Bool
	tries atomic.Int64
	retry time.Duration
}

func (l *lock) try(context.Context) (bool, time.Duration, error) {
	l.tries.Add(1)
	return l.free.Load(), l.retry, nil
}

func TestSingleAttemptNeverSubscribes(t *testing.T) {
	h, _ := setup(t)
	l := &lock{retry: time.Second}
	ok, err := wait.Acquire(t.Context(), wait.Spec{Hub: h, Channel: "wait:" + t.Name(), Deadline: time.Now(), Try: l.try})
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Equal(t, int64(1), l.tries.Load())
	assert.Zero(t, h.Channels())
}

func TestWokenByMessage(t *testing.T) {
	h, rc := setup(t)
	ch := "wait:" + t.Name()
	l := &lock{retry: time.Minute}
	done := make(chan error, 1)
	go func() {
		ok, err := wait.Acquire(t.Context(), wait.Spec{Hub: h, Channel: ch, Forever: true, Try: l.try})
		if err == nil && !ok {
			err = assert.AnError
		}
		done <- err
	}()
	require.Eventually(t, func() bool { return l.tries.Load() == 2 }, 5*time.Second, time.Millisecond,
		"try, subscribe, try again")
	l.free.Store(true)
	require.NoError(t, rc.Do(t.Context(), rc.B().Publish().Channel(ch).Message("0").Build()).Error())
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("not woken by the message (the retry bound is a minute)")
	}
	assert.Equal(t, int64(3), l.tries.Load())
}

func TestRetryBoundWithoutMessage(t *testing.T) {
	h, _ := setup(t)
	l := &lock{retry: 50 * time.Millisecond}
	go func() {
		time.Sleep(150 * time.Millisecond)
		l.free.Store(true) // an expiry: nothing is published
	}()
	start := time.Now()
	ok, err := wait.Acquire(t.Context(), wait.Spec{Hub: h, Channel: "wait:" + t.Name(), Forever: true, Try: l.try})
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Less(t, time.Since(start), 2*time.Second)
}

func TestWaitRunsOutAndCtxEnds(t *testing.T) {
	h, _ := setup(t)
	l := &lock{retry: time.Minute}
	start := time.Now()
	ok, err := wait.Acquire(t.Context(), wait.Spec{Hub: h, Channel: "wait:" + t.Name(), Deadline: start.Add(100 * time.Millisecond), Try: l.try})
	require.NoError(t, err, "a wait that runs out is not an error")
	assert.False(t, ok)
	assert.Less(t, time.Since(start), time.Second)

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	ok, err = wait.Acquire(ctx, wait.Spec{Hub: h, Channel: "wait:" + t.Name(), Forever: true, Try: l.try})
	assert.False(t, ok)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	require.Eventually(t, func() bool { return h.Channels() == 0 }, 5*time.Second, time.Millisecond)
}

func TestQueueJoinsParkedWaiters(t *testing.T) {
	h, rc := setup(t)
	ch := "wait:" + t.Name()
	first := &lock{retry: time.Minute}
	go func() {
		_, _ = wait.Acquire(t.Context(), wait.Spec{Hub: h, Channel: ch, Forever: true, Try: first.try})
	}()
	require.Eventually(t, func() bool { return first.tries.Load() == 2 }, 5*time.Second, time.Millisecond)
	// Parked once a Join finds it (a probe, closed at once), however long
	// a loaded machine takes to get it there.
	require.Eventually(t, func() bool {
		sub, _, ok := h.Join(ch, false)
		if ok {
			sub.Close()
		}
		return ok
	}, 5*time.Second, time.Millisecond, "the first waiter did not park")

	second := &lock{retry: time.Minute}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = wait.Acquire(t.Context(), wait.Spec{Hub: h, Channel: ch, Forever: true, Queue: true, Try: second.try})
	}()
	time.Sleep(50 * time.Millisecond)
	assert.Zero(t, second.tries.Load(), "a newcomer queues behind the parked waiter without trying")

	first.free.Store(true)
	second.free.Store(true)
	require.NoError(t, rc.Do(t.Context(), rc.B().Publish().Channel(ch).Message("0").Build()).Error())
	require.Eventually(t, func() bool { return first.tries.Load() == 3 }, 5*time.Second, time.Millisecond, "the first waiter is woken first")
	require.NoError(t, rc.Do(t.Context(), rc.B().Publish().Channel(ch).Message("0").Build()).Error())
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the queued newcomer was never woken")
	}
	assert.Equal(t, int64(1), second.tries.Load())
}
