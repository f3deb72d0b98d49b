package lockcore

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/goid"
	"github.com/interlock-go/interlock/internal/report"
	"github.com/interlock-go/interlock/internal/runtime"
	"github.com/interlock-go/interlock/internal/script"
)

// ackTimeout is the WAIT timeout of the safe-mode tests.
const ackTimeout = 50 * time.Millisecond

// requireOpErr asserts that err is an *interlock.Error of op on name that
// wraps target.
func requireOpErr(t *testing.T, err error, op interlock.Op, name string, target error) {
	t.Helper()
	require.ErrorIs(t, err, target)
	var e *interlock.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, interlock.KindRLock, e.Kind)
	assert.Equal(t, op, e.Op)
	assert.Equal(t, name, e.Name)
}

// On a server without replicas safe mode takes every acquisition back
// (a re-entry to the count before it); an unlock still releases.
func TestSafeModeWithoutReplicas(t *testing.T) {
	c, tp := newClient(t, interlock.WithReplicaAcks(1, ackTimeout))
	ctx := testCtx(t)
	name := lockName(t)
	l := New(c, &testKind, name)
	_, holder, err := l.owner(ctx, report.OpAcquire)
	require.NoError(t, err)

	start := time.Now()
	err = l.Lock(ctx)
	took := time.Since(start)
	requireOpErr(t, err, "acquire", name, interlock.ErrReplication)
	assert.Contains(t, err.Error(), "0 of 1 replicas acknowledged within 50ms")
	assert.GreaterOrEqual(t, took, ackTimeout)
	assert.Less(t, took, ackTimeout+time.Second, "Lock must fail, not retry")
	assert.False(t, exists(t, tp, name), "key left on the server")
	assert.Zero(t, c.Stats().Holds, "hold left in the Client")
	assert.Zero(t, c.Stats().UndoQueue)
	undos := tp.sent(script.UndoAcquire())
	require.Len(t, undos, 1)
	assert.Equal(t, "1", undos[0].argv()[2], "the undo expects the acquisition's count")
	waits := 0
	for _, r := range tp.sent(nil) {
		if r.args[0] == "WAIT" {
			waits++
			assert.Equal(t, []string{"WAIT", "1", "50"}, r.args)
		}
	}
	assert.Equal(t, 1, waits, "the undo is not followed by WAIT")

	ok, err := l.TryLock(ctx, 0, time.Minute)
	requireOpErr(t, err, "acquire", name, interlock.ErrReplication)
	assert.False(t, ok)
	assert.False(t, exists(t, tp, name))

	// A re-entry is taken back to the count before it.
	tp.setAckAll(true)
	require.NoError(t, l.Lock(ctx))
	tp.setAckAll(false)
	requireOpErr(t, l.Lock(ctx), "acquire", name, interlock.ErrReplication)
	assert.Equal(t, 1, holdCount(t, tp, name, holder))
	assert.Equal(t, 1, runtime.Of(c).Renewal.Holds(name, holder))
	undos = tp.sent(script.UndoAcquire())
	require.Len(t, undos, 3)
	assert.Equal(t, "2", undos[2].argv()[2])

	// An unlock no replica acknowledged still releases.
	err = l.Unlock(ctx)
	requireOpErr(t, err, interlock.OpRelease, name, interlock.ErrReplication)
	assert.NotErrorIs(t, err, interlock.ErrNotHeld)
	assert.False(t, exists(t, tp, name))
	assert.Zero(t, c.Stats().Holds)
	requireOpErr(t, l.Unlock(ctx), interlock.OpRelease, name, interlock.ErrNotHeld)
}

// loseAcquire makes the tap lose the reply of the next acquire script
// (after or before the server ran it); it reports when it did.
func loseAcquire(tp *tap, afterRun bool) <-chan struct{} {
	lost := make(chan struct{})
	var once sync.Once
	tp.setHook(func(ctx context.Context, r record, next func() rueidis.RedisResult) rueidis.RedisResult {
		hit := false
		if r.script == script.Acquire() {
			once.Do(func() { hit = true })
		}
		if !hit {
			return next()
		}
		defer close(lost)
		if afterRun {
			next()
		}
		return rueidis.NewErrorResult(io.ErrUnexpectedEOF)
	})
	return lost
}

// A reply lost on the connection is taken back by a count-checked undo,
// only when the script ran; the caller waits for it and fails.
func TestLostAcquireReplyIsUndone(t *testing.T) {
	for _, tc := range []struct {
		name     string
		held     int  // holds before the lost acquisition
		afterRun bool // the server ran it
	}{
		{"first, ran", 0, true},
		{"first, not sent", 0, false},
		{"re-entry, ran", 1, true},
		{"re-entry, not sent", 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, tp := newClient(t)
			ctx := testCtx(t)
			name := lockName(t)
			l := New(c, &testKind, name)
			_, holder, err := l.owner(ctx, report.OpAcquire)
			require.NoError(t, err)
			for range tc.held {
				require.NoError(t, l.Lock(ctx))
			}

			loseAcquire(tp, tc.afterRun)
			start := time.Now()
			err = l.Lock(ctx)
			requireOpErr(t, err, "acquire", name, io.ErrUnexpectedEOF)
			assert.Less(t, time.Since(start), undoTimeout, "a healthy server undoes at once")
			assert.Zero(t, c.Stats().UndoQueue, "the caller waited for the undo")
			undos := tp.sent(script.UndoAcquire())
			require.Len(t, undos, 1)
			assert.Equal(t, []string{"0", holder, []string{"1", "2"}[tc.held], "PUBLISH"}, undos[0].argv())
			assert.Equal(t, tc.held, holdCount(t, tp, name, holder), "the holds before it are kept")
			assert.Equal(t, tc.held, runtime.Of(c).Renewal.Holds(name, holder))

			tp.setHook(nil)
			require.NoError(t, l.Lock(ctx))
			for range tc.held + 1 {
				require.NoError(t, l.Unlock(ctx))
			}
			assert.False(t, exists(t, tp, name))
		})
	}
}

// A Redis error reply means the script did not run: nothing is undone. A
// key of another type under the lock's name is a bad argument, as it is
// for every synchronizer.
func TestRedisErrorIsNotUndone(t *testing.T) {
	c, tp := newClient(t)
	ctx := testCtx(t)
	name := lockName(t)
	l := New(c, &testKind, name)
	require.NoError(t, tp.Client.Do(ctx, tp.Client.B().Set().Key(name).Value("not a hash").Build()).Error())
	err := l.Lock(ctx)
	require.Error(t, err)
	assert.ErrorIs(t, err, interlock.ErrInvalid)
	assert.EqualError(t, err, "rlock: acquire "+name+": interlock: invalid argument: "+name+" holds another type of data: a string, not a lock's hash")
	assert.Empty(t, tp.sent(script.UndoAcquire()))
	assert.Zero(t, c.Stats().UndoQueue)
}

// An acquisition whose reply its deadline lost returns the context's
// error by that deadline; the Client's clean-up goroutine takes it back.
func TestReplyLostToDeadlineIsUndoneInBackground(t *testing.T) {
	c, tp := newClient(t)
	ctx := testCtx(t)
	name := lockName(t)
	l := New(c, &testKind, name)
	const deadline = 100 * time.Millisecond
	lctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	tp.setHook(func(cctx context.Context, r record, next func() rueidis.RedisResult) rueidis.RedisResult {
		if r.script != script.Acquire() {
			return next()
		}
		next() // the script runs on the server ...
		<-lctx.Done()
		return rueidis.NewErrorResult(lctx.Err()) // ... and its reply is lost to the caller's deadline
	})
	start := time.Now()
	err := l.Lock(lctx)
	took := time.Since(start)
	assert.Equal(t, context.DeadlineExceeded, err)
	assert.Less(t, took, deadline+runtime.CleanupGrace+pauseSlack)
	require.Eventually(t, func() bool { return !exists(t, tp, name) }, 2*time.Second, 5*time.Millisecond, "the lost hold stays")
	require.Eventually(t, func() bool { return c.Stats().UndoQueue == 0 }, 2*time.Second, 5*time.Millisecond)
	assert.Len(t, tp.sent(script.UndoAcquire()), 1)
	assert.Zero(t, c.Stats().Holds)
}

// The undo of a lost acquisition runs on the clean-up goroutine: the
// caller returns by its deadline while it is stuck, and the owner's next
// acquisition waits for it (Settle) before it sends anything.
func TestNextAcquisitionWaitsForTheUndo(t *testing.T) {
	c, tp := newClient(t)
	ctx := testCtx(t)
	name := lockName(t)
	l := New(c, &testKind, name)
	_, holder, err := l.owner(ctx, report.OpAcquire)
	require.NoError(t, err)

	gate := make(chan struct{})
	undoing := make(chan int64, 10) // the goroutine of each undo try
	var mu sync.Mutex
	var undone time.Time // when the undo's reply came back
	lost := false
	tp.setHook(func(cctx context.Context, r record, next func() rueidis.RedisResult) rueidis.RedisResult {
		switch r.script {
		case script.Acquire():
			mu.Lock()
			lose := !lost
			lost = true
			mu.Unlock()
			if lose {
				next()
				return rueidis.NewErrorResult(io.ErrUnexpectedEOF)
			}
		case script.UndoAcquire():
			g, _ := goid.ID()
			undoing <- g
			select {
			case <-gate:
			case <-cctx.Done():
				return rueidis.NewErrorResult(cctx.Err())
			}
			res := next()
			mu.Lock()
			undone = time.Now()
			mu.Unlock()
			return res
		}
		return next()
	})

	const deadline = 150 * time.Millisecond
	lctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	start := time.Now()
	err = l.Lock(lctx)
	took := time.Since(start)
	requireOpErr(t, err, "acquire", name, io.ErrUnexpectedEOF)
	assert.Less(t, took, deadline+runtime.CleanupGrace+pauseSlack, "the caller waited past its deadline")
	assert.Greater(t, took, deadline/2, "the caller did not wait for the undo while it could")
	caller, err := goid.ID()
	require.NoError(t, err)
	select {
	case g := <-undoing:
		assert.NotEqual(t, caller, g, "the undo ran on the caller's goroutine")
	case <-time.After(5 * time.Second):
		t.Fatal("no undo")
	}
	assert.Equal(t, 1, holdCount(t, tp, name, holder), "the lost hold waits for its undo")
	assert.Equal(t, 1, c.Stats().UndoQueue)
	assert.Zero(t, c.Stats().Holds)

	done := make(chan error, 1)
	go func() { done <- l.Lock(ctx) }()
	select {
	case err := <-done:
		t.Fatalf("the next acquisition did not wait for the undo: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	assert.Len(t, tp.sent(script.Acquire()), 1, "an acquire sent before the undo")

	close(gate)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the next acquisition hangs")
	}
	acquires := tp.sent(script.Acquire())
	require.Len(t, acquires, 2)
	mu.Lock()
	assert.True(t, acquires[1].at.After(undone), "the next acquire went out before the undo's reply")
	mu.Unlock()
	assert.Equal(t, 1, holdCount(t, tp, name, holder), "only the new hold")
	assert.Zero(t, c.Stats().UndoQueue)
	assert.Equal(t, 1, c.Stats().Holds)
	require.NoError(t, l.Unlock(ctx))
	assert.False(t, exists(t, tp, name))
}
