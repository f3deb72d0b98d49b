package interlock_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/fenced"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/runtime"
	"github.com/interlock-go/interlock/latch"
	"github.com/interlock-go/interlock/nonreentrant"
	"github.com/interlock-go/interlock/rlock"
	"github.com/interlock-go/interlock/rwlock"
	"github.com/interlock-go/interlock/semaphore"
	"github.com/interlock-go/interlock/spin"
)

// recorder is an Observer that keeps every event, with the trace value of
// the context it came with.
type recorder struct {
	mu     sync.Mutex
	events []seen
}

type seen struct {
	interlock.Event
	trace any // traceKey's value in the event's context
}

type traceKey struct{}

func (r *recorder) Observe(ctx context.Context, e interlock.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, seen{e, ctx.Value(traceKey{})})
}

// of returns the events about kind and name, in order.
func (r *recorder) of(kind interlock.Kind, name string) []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []seen
	for _, e := range r.events {
		if e.Kind == kind && e.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// op returns the events of op (any kind and name), in order.
func (r *recorder) op(op interlock.Op) []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []seen
	for _, e := range r.events {
		if e.Op == op {
			out = append(out, e)
		}
	}
	return out
}

// counts tallies events as "op/outcome".
func counts(es []seen) map[string]int {
	m := map[string]int{}
	for _, e := range es {
		m[string(e.Op)+"/"+e.Outcome]++
	}
	return m
}

// observedLock is one lock kind under test: l, and blocker, which makes l
// busy for another owner (l itself, or the other half of a read/write lock).
type observedLock struct {
	kind       interlock.Kind
	reentrant  bool
	l, blocker func(c *interlock.Client, name string) interlock.Locker
}

func self(mk func(c *interlock.Client, name string) interlock.Locker) observedLock {
	return observedLock{l: mk, blocker: mk}
}

// TestObserverLocks drives every lock kind through each acquisition and
// release outcome, under a NameMapper, and checks the events one by one:
// counts, names as given, attempts, hold times and the caller's context.
func TestObserverLocks(t *testing.T) {
	kinds := []observedLock{
		self(func(c *interlock.Client, n string) interlock.Locker { return rlock.New(c, n) }),
		self(func(c *interlock.Client, n string) interlock.Locker { return fairlock.New(c, n) }),
		{l: func(c *interlock.Client, n string) interlock.Locker { return rwlock.New(c, n).Read() },
			blocker: func(c *interlock.Client, n string) interlock.Locker { return rwlock.New(c, n).Write() }},
		self(func(c *interlock.Client, n string) interlock.Locker { return rwlock.New(c, n).Write() }),
		self(func(c *interlock.Client, n string) interlock.Locker { return fenced.New(c, n) }),
		self(func(c *interlock.Client, n string) interlock.Locker { return nonreentrant.New(c, n) }),
		self(func(c *interlock.Client, n string) interlock.Locker {
			return nonreentrant.NewFair(c, n, nonreentrant.WithWaitTimeout(5*time.Second))
		}),
		self(func(c *interlock.Client, n string) interlock.Locker {
			return spin.New(c, n, spin.WithConstantBackoff(5*time.Millisecond))
		}),
	}
	labels := []interlock.Kind{interlock.KindRLock, interlock.KindFairLock, interlock.KindReadLock, interlock.KindWriteLock,
		interlock.KindFenced, interlock.KindNonReentrant, interlock.KindNonReentrantFair, interlock.KindSpin}
	for i := range kinds {
		kinds[i].kind = labels[i]
		kinds[i].reentrant = labels[i] != interlock.KindNonReentrant && labels[i] != interlock.KindNonReentrantFair
	}
	rec := &recorder{}
	c := newClient(t, interlock.WithObserver(rec), interlock.WithNameMapper(interlock.PrefixNames("obs:")))
	for _, k := range kinds {
		t.Run(string(k.kind), func(t *testing.T) {
			t.Parallel()
			observeLock(t, c, rec, k)
		})
	}
}

func observeLock(t *testing.T, c *interlock.Client, rec *recorder, k observedLock) {
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), traceKey{}, "trace-"+string(k.kind)), 20*time.Second)
	defer cancel()
	a, b := interlock.WithOwner(ctx, interlock.NewOwnerID()), interlock.WithOwner(ctx, interlock.NewOwnerID())
	name := "observed:" + string(k.kind)
	l, blocker := k.l(c, name), k.blocker(c, name)

	require.NoError(t, blocker.Lock(a))
	ok, err := l.TryLock(b, 0, 0)
	require.NoError(t, err)
	require.False(t, ok)
	ok, err = l.TryLock(b, 50*time.Millisecond, 0)
	require.NoError(t, err)
	require.False(t, ok)
	short, stop := context.WithTimeout(b, 50*time.Millisecond)
	deadline, _ := short.Deadline()
	called := time.Now()
	_, err = l.TryLock(short, 10*time.Second, 0)
	cancelledTook := time.Since(called)
	stop()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.False(t, time.Now().Before(deadline), "the wait ended before its context")
	require.NoError(t, blocker.Unlock(a))

	require.NoError(t, l.Lock(b))
	time.Sleep(20 * time.Millisecond) // a hold time to measure
	if k.reentrant {
		require.NoError(t, l.Lock(b))
		require.NoError(t, l.Unlock(b))
	} else {
		_, err := l.TryLock(b, 0, 0)
		require.ErrorIs(t, err, nonreentrant.ErrReentered)
	}
	require.NoError(t, l.Unlock(b))
	require.ErrorIs(t, l.Unlock(b), interlock.ErrNotHeld)

	want := map[string]int{"acquire/acquired": 1, "acquire/busy": 1, "acquire/timed_out": 1, "acquire/cancelled": 1,
		"release/released": 1, "release/not_held": 1}
	if k.reentrant {
		want["acquire/acquired"]++
		want["release/decremented"]++
	} else {
		want["acquire/error"]++
	}
	if k.kind != interlock.KindReadLock { // the blocker is the lock itself
		want["acquire/acquired"]++
		want["release/released"]++
	}
	// The attempt in flight when the short context ended may have reached
	// the server: its take-back, from the undo queue, is no caller's.
	var events, undos []seen
	for _, e := range rec.of(k.kind, name) {
		if e.Op == interlock.OpUndo {
			undos = append(undos, e)
		} else {
			events = append(events, e)
		}
	}
	assert.LessOrEqual(t, len(undos), 1, "undo events: %+v", undos)
	for _, e := range undos {
		assert.Equal(t, interlock.OutcomeOK, e.Outcome)
	}
	assert.Equal(t, want, counts(events), "events: %+v", events)
	assert.Empty(t, rec.of(k.kind, "obs:"+name), "events carry the name as given")

	for _, e := range events {
		assert.Equal(t, "trace-"+string(k.kind), e.trace, "%s/%s comes with the caller's context", e.Op, e.Outcome)
		assert.Zero(t, e.Permits)
		switch e.Outcome {
		case interlock.OutcomeAcquired:
			assert.GreaterOrEqual(t, e.Attempts, 1)
			assert.NoError(t, e.Err)
		case interlock.OutcomeBusy:
			assert.Equal(t, 1, e.Attempts, "a try without a wait sends one script")
			assert.Less(t, e.Duration, 5*time.Second)
		case interlock.OutcomeTimedOut:
			assert.GreaterOrEqual(t, e.Attempts, 1)
			assert.GreaterOrEqual(t, e.Duration, 50*time.Millisecond)
		case interlock.OutcomeCancelled:
			// From the call's own start, which a stalled machine may take
			// well after the context's: within the call, never longer.
			assert.Positive(t, e.Duration)
			assert.LessOrEqual(t, e.Duration, cancelledTook)
			assert.NoError(t, e.Err)
		case interlock.OutcomeError:
			assert.ErrorIs(t, e.Err, nonreentrant.ErrReentered)
		case interlock.OutcomeReleased, interlock.OutcomeDecremented:
			assert.Equal(t, 1, e.Attempts)
			assert.Positive(t, e.Duration)
			assert.NoError(t, e.Err)
			assert.Positive(t, e.Held)
		case interlock.OutcomeNotHeld:
			assert.Equal(t, 1, e.Attempts)
			assert.Zero(t, e.Held)
		}
	}
	// The lock's own last hold: acquired after the sleep began, released
	// after it; the decrement and the release measure from the outer hold.
	last := events[len(events)-2]
	require.Equal(t, interlock.OutcomeReleased, last.Outcome)
	assert.GreaterOrEqual(t, last.Held, 20*time.Millisecond)
	assert.Less(t, last.Held, 10*time.Second)
}

// TestObserverSemaphoresAndLatch: semaphores report permits, the latch's
// await and count-down are an acquisition and a release.
func TestObserverSemaphoresAndLatch(t *testing.T) {
	rec := &recorder{}
	c := newClient(t, interlock.WithObserver(rec))
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), traceKey{}, "sem"), 20*time.Second)
	defer cancel()
	short := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 50*time.Millisecond) }
	want := map[string]int{"acquire/acquired": 1, "acquire/busy": 1, "acquire/timed_out": 1, "acquire/cancelled": 1,
		"release/released": 1, "release/not_held": 1}

	t.Run("semaphore", func(t *testing.T) {
		s := semaphore.New(c, "observed:sem")
		_, _ = s.Delete(ctx)
		_, err := s.TrySetPermits(ctx, 2)
		require.NoError(t, err)
		require.NoError(t, s.Acquire(ctx, 2))
		ok, err := s.TryAcquire(ctx, 1, 0)
		require.False(t, ok)
		require.NoError(t, err)
		ok, err = s.TryAcquire(ctx, 1, 50*time.Millisecond)
		require.False(t, ok)
		require.NoError(t, err)
		sctx, stop := short()
		_, err = s.TryAcquire(sctx, 1, 10*time.Second)
		stop()
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.NoError(t, s.Release(ctx, 2))
		_, err = s.Delete(ctx)
		require.NoError(t, err)
		ok, err = s.ReleaseIfExists(ctx, 1)
		require.NoError(t, err)
		require.False(t, ok)

		events := rec.of(interlock.KindSemaphore, "observed:sem")
		assert.Equal(t, want, counts(events), "events: %+v", events)
		for _, e := range events {
			assert.Equal(t, "sem", e.trace)
			if e.Outcome == interlock.OutcomeAcquired || e.Outcome == interlock.OutcomeReleased {
				assert.Equal(t, 2, e.Permits)
			} else {
				assert.Equal(t, 1, e.Permits)
			}
			if e.Outcome == interlock.OutcomeBusy {
				assert.Equal(t, 1, e.Attempts)
			}
		}
	})

	t.Run("expirable", func(t *testing.T) {
		s := semaphore.NewExpirable(c, "observed:pes")
		_, _ = s.Delete(ctx)
		_, err := s.TrySetPermits(ctx, 1)
		require.NoError(t, err)
		ids, err := s.Acquire(ctx, 1, 0)
		require.NoError(t, err)
		_, ok, err := s.TryAcquire(ctx, 1, 0, 0)
		require.False(t, ok)
		require.NoError(t, err)
		_, ok, err = s.TryAcquire(ctx, 1, 50*time.Millisecond, 0)
		require.False(t, ok)
		require.NoError(t, err)
		sctx, stop := short()
		_, _, err = s.TryAcquire(sctx, 1, 10*time.Second, 0)
		stop()
		require.ErrorIs(t, err, context.DeadlineExceeded)
		time.Sleep(10 * time.Millisecond)
		require.NoError(t, s.Release(ctx, ids...))
		ok, err = s.TryRelease(ctx, ids...)
		require.NoError(t, err)
		require.False(t, ok)

		events := rec.of(interlock.KindExpirable, "observed:pes")
		assert.Equal(t, want, counts(events), "events: %+v", events)
		for _, e := range events {
			assert.Equal(t, 1, e.Permits)
			if e.Outcome == interlock.OutcomeReleased {
				assert.GreaterOrEqual(t, e.Held, 90*time.Millisecond, "held across the three tries")
			}
		}
	})

	t.Run("latch", func(t *testing.T) {
		l := latch.New(c, "observed:latch")
		_, _ = l.Delete(ctx)
		_, err := l.TrySetCount(ctx, 1)
		require.NoError(t, err)
		lctx, stop := short()
		require.ErrorIs(t, l.Await(lctx), context.DeadlineExceeded)
		stop()
		done := make(chan error, 1)
		go func() { done <- l.Await(ctx) }()
		require.Eventually(t, func() bool { return c.Stats().Waiters == 1 }, 5*time.Second, time.Millisecond,
			"the parked await is counted")
		require.NoError(t, l.CountDown(ctx))
		require.NoError(t, <-done)
		assert.Zero(t, c.Stats().Waiters)

		events := rec.of(interlock.KindLatch, "observed:latch")
		assert.Equal(t, map[string]int{"acquire/cancelled": 1, "acquire/acquired": 1, "release/released": 1}, counts(events),
			"events: %+v", events)
		for _, e := range events {
			assert.Zero(t, e.Permits)
			assert.Equal(t, "sem", e.trace)
		}
	})
}

// TestObserverLossesAndRenewal: a lock and an expirable permit deleted by
// hand are each lost once, under their kind and name; a tick reports its
// entries and chunks.
func TestObserverLossesAndRenewal(t *testing.T) {
	rec := &recorder{}
	// Renewals every 333ms: the held locks outlive a loaded machine's late
	// ticks, which would lose them too.
	const watchdog = time.Second
	c := newClient(t, interlock.WithObserver(rec), interlock.WithWatchdogTimeout(watchdog), interlock.WithRenewalBatchSize(2))
	admin := redistest.NewClient(t, addr)
	ctx := interlock.WithOwner(context.Background(), interlock.NewOwnerID())

	// The three locks share a slot: a tick groups its entries by slot,
	// then chunks each group.
	held := []*rlock.Mutex{rlock.New(c, "{observed}:held:1"), rlock.New(c, "{observed}:held:2")}
	for _, m := range held {
		require.NoError(t, m.Lock(ctx))
	}
	lost := rlock.New(c, "{observed}:lost")
	require.NoError(t, lost.Lock(ctx))
	s := semaphore.NewExpirable(c, "observed:lost-permit")
	_, _ = s.Delete(ctx)
	_, err := s.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	ids, err := s.Acquire(ctx, 1, 0)
	require.NoError(t, err)

	require.Eventually(t, func() bool {
		for _, e := range rec.op(interlock.OpRenew) {
			if e.Entries == 4 {
				return true
			}
		}
		return false
	}, 5*time.Second, time.Millisecond, "a tick renews the four holds")
	for _, e := range rec.op(interlock.OpRenew) {
		if e.Entries == 4 {
			assert.Equal(t, 3, e.Chunks, "three locks in two chunks of at most 2, the permit in its own")
			assert.Equal(t, interlock.OutcomeOK, e.Outcome)
			assert.Zero(t, e.Failures)
			assert.NoError(t, e.Err)
			assert.Positive(t, e.Duration)
			assert.Empty(t, e.Kind)
			assert.Nil(t, e.trace, "background work comes with a background context")
		}
	}

	g, pg := lost.Guard(ctx), s.Guard(ctx, ids...)
	require.NoError(t, admin.Do(ctx, admin.B().Del().Key("{observed}:lost").Build()).Error())
	require.NoError(t, admin.Do(ctx, admin.B().Del().Key("{observed:lost-permit}:timeout").Build()).Error())
	for _, g := range []context.Context{g, pg} {
		select {
		case <-g.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("the deleted hold was not lost")
		}
	}
	require.Eventually(t, func() bool { return len(rec.op(interlock.OpLost)) == 2 }, 2*time.Second, time.Millisecond)
	time.Sleep(2 * watchdog / 3) // more ticks: no loss is reported twice
	losses := rec.op(interlock.OpLost)
	require.Len(t, losses, 2, "%+v", losses)
	byKind := map[interlock.Kind]seen{}
	for _, e := range losses {
		byKind[e.Kind] = e
	}
	assert.Equal(t, "{observed}:lost", byKind[interlock.KindRLock].Name)
	assert.ErrorIs(t, byKind[interlock.KindRLock].Err, interlock.ErrLockLost)
	assert.Equal(t, "observed:lost-permit", byKind[interlock.KindExpirable].Name)
	assert.ErrorIs(t, byKind[interlock.KindExpirable].Err, semaphore.ErrPermitLost)

	require.ErrorIs(t, lost.Unlock(ctx), interlock.ErrNotHeld)
	assert.Len(t, rec.op(interlock.OpLost), 2, "an unlock after the loss reports not_held, no second loss")
	for _, m := range held {
		require.NoError(t, m.Unlock(ctx))
	}
}

// TestObserverRefusedAndUndo: under safe mode with no replica to
// acknowledge, every acquisition is refused and taken back by the undo
// queue.
func TestObserverRefusedAndUndo(t *testing.T) {
	rec := &recorder{}
	c := newClient(t, interlock.WithObserver(rec), interlock.WithReplicaAcks(1, time.Millisecond))
	ctx := context.WithValue(context.Background(), traceKey{}, "refused")
	_, err := rlock.New(c, "observed:refused").TryLock(ctx, 0, 0)
	require.ErrorIs(t, err, interlock.ErrReplication)
	s := semaphore.New(c, "observed:refused-sem")
	_, err = s.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	_, err = s.TryAcquire(ctx, 1, 0)
	require.ErrorIs(t, err, interlock.ErrReplication)

	require.Eventually(t, func() bool { return len(rec.op(interlock.OpUndo)) == 2 }, 5*time.Second, time.Millisecond)
	for kind, name := range map[interlock.Kind]string{interlock.KindRLock: "observed:refused", interlock.KindSemaphore: "observed:refused-sem"} {
		events := rec.of(kind, name)
		assert.Equal(t, map[string]int{"refused/error": 1, "acquire/error": 1, "undo/ok": 1}, counts(events), "%s: %+v", kind, events)
		for _, e := range events {
			if e.Op == interlock.OpUndo {
				assert.Nil(t, e.trace, "the undo queue runs in the background")
			} else {
				assert.Equal(t, "refused", e.trace)
				assert.ErrorIs(t, e.Err, interlock.ErrReplication)
			}
		}
	}
	n, err := s.Available(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, 1, n, "the refused permit was given back")
}

// TestObserverPubSub: a broken subscription connection is reported, and
// so is its return.
func TestObserverPubSub(t *testing.T) {
	srv := redistest.Standalone(t)
	rec := &recorder{}
	c, err := interlock.New(srv.Client(t), interlock.WithObserver(rec))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub, err := runtime.Of(c).Hub.Subscribe(ctx, "observed:pubsub", false)
	require.NoError(t, err)
	defer sub.Close()
	assert.Empty(t, rec.op(interlock.OpPubSub), "a first connection is no reconnection")

	admin := srv.Client(t)
	require.NoError(t, admin.Do(ctx, admin.B().ClientKill().TypePubsub().Build()).Error())
	require.Eventually(t, func() bool { return counts(rec.op(interlock.OpPubSub))["pubsub/ok"] == 1 }, 5*time.Second,
		time.Millisecond, "the connection came back")
	events := rec.op(interlock.OpPubSub)
	require.GreaterOrEqual(t, len(events), 2)
	assert.Equal(t, interlock.OutcomeError, events[0].Outcome)
	assert.ErrorContains(t, events[0].Err, "lost")
	assert.Equal(t, interlock.OutcomeOK, events[len(events)-1].Outcome, "%+v", events)
	for _, e := range events {
		assert.Empty(t, e.Kind)
		assert.Empty(t, e.Name)
	}
}

// TestStatsWaiters: a blocked acquisition is counted while it waits.
func TestStatsWaiters(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	a := interlock.WithOwner(ctx, interlock.NewOwnerID())
	m := rlock.New(c, "observed:waiters")
	require.NoError(t, m.Lock(a))
	assert.Zero(t, c.Stats().Waiters, "a holder is no waiter")
	done := make(chan error, 2)
	for range 2 {
		go func() {
			ctx := interlock.WithOwner(ctx, interlock.NewOwnerID())
			ok, err := m.TryLock(ctx, 10*time.Second, time.Second)
			if err == nil && !ok {
				err = errors.New("not acquired")
			}
			done <- err
		}()
	}
	require.Eventually(t, func() bool { return c.Stats().Waiters == 2 }, 5*time.Second, time.Millisecond)
	require.NoError(t, m.Unlock(a))
	require.NoError(t, <-done) // the first waiter's lease frees it for the second
	require.NoError(t, <-done)
	assert.Zero(t, c.Stats().Waiters)
}

// TestObserverCostsNothingUnset: a Client without an Observer allocates
// no more per lock and unlock than one whose Observer does nothing, and
// the Observer's events allocate nothing of their own. Each is measured in
// alternating rounds and judged by its least: allocations in the
// process's other goroutines only add.
func TestObserverCostsNothingUnset(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts")
	}
	var heard atomic.Int64
	noop := interlock.ObserverFunc(func(context.Context, interlock.Event) { heard.Add(1) })
	pair := func(opts ...interlock.Option) func() {
		c := newClient(t, append(opts, interlock.WithWatchdogTimeout(time.Minute))...)
		m := rlock.New(c, fmt.Sprintf("observed:allocs:%d", len(opts)))
		ctx := interlock.WithOwner(context.Background(), interlock.NewOwnerID())
		run := func() {
			if err := m.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			if err := m.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		}
		run() // scripts loaded, connections dialled
		return run
	}
	unsetRun, setRun := pair(), pair(interlock.WithObserver(noop))
	unset, set := math.Inf(1), math.Inf(1)
	// The least of 30 tries each: AllocsPerRun counts the whole process,
	// and the renewal rounds of other Clients still closing allocate too
	// (ten tries left one of the two 2 above its floor in one run of ten).
	for range 30 {
		unset = min(unset, testing.AllocsPerRun(100, unsetRun))
		set = min(set, testing.AllocsPerRun(100, setRun))
	}
	t.Logf("allocations per lock+unlock: %.1f without an Observer, %.1f with one", unset, set)
	assert.Positive(t, heard.Load())
	assert.InDelta(t, unset, set, 1, "events allocate nothing")
}

// Observers and a logger given together are all told, in order.
func TestObserversAndLoggerCompose(t *testing.T) {
	first, second := &recorder{}, &recorder{}
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}), nil))
	c := newClient(t, interlock.WithObserver(first), interlock.WithLogger(logger), interlock.WithObserver(second),
		interlock.WithWatchdogTimeout(300*time.Millisecond))
	admin := redistest.NewClient(t, addr)
	ctx := interlock.WithOwner(context.Background(), interlock.NewOwnerID())
	m := rlock.New(c, "observed:compose")
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, admin.Do(ctx, admin.B().Del().Key("observed:compose").Build()).Error())
	require.Eventually(t, func() bool { return len(second.op(interlock.OpLost)) == 1 }, 5*time.Second, time.Millisecond)
	assert.Len(t, first.op(interlock.OpAcquire), 1)
	assert.Len(t, second.op(interlock.OpAcquire), 1)
	assert.Len(t, first.op(interlock.OpLost), 1)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(logs.String(), "level=ERROR")
	}, 5*time.Second, time.Millisecond, "the logger heard the loss")
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
