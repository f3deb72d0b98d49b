package lockcore

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/report"
	"github.com/interlock-go/interlock/internal/runtime"
	"github.com/interlock-go/interlock/internal/script"
)

// pauseSlack is how much longer than the engine's pause a resend may come
// on a loaded machine, whose timers fire up to 600ms late (latency, not
// safety: a pause is never shorter).
const pauseSlack = 500 * time.Millisecond

// loseUnlocks makes the tap lose the replies of the first n unlock sends
// (all when n < 0), after the server ran them or before they were sent.
func loseUnlocks(tp *tap, n int, afterRun bool) {
	var lost atomic.Int64
	tp.setHook(func(ctx context.Context, r record, next func() rueidis.RedisResult) rueidis.RedisResult {
		if r.script != script.Unlock() || (n >= 0 && lost.Load() >= int64(n)) {
			return next()
		}
		lost.Add(1)
		if afterRun {
			next()
		}
		return rueidis.NewErrorResult(io.ErrUnexpectedEOF)
	})
}

// checkResends asserts that sends are one request, sent again after
// pauses doubling from 50ms up to 1s.
func checkResends(t *testing.T, sends []record) {
	t.Helper()
	want := unlockPauseMin
	for i := 1; i < len(sends); i++ {
		assert.Equal(t, sends[0].args, sends[i].args, "send %d is the same request, under the same latch", i)
		pause := sends[i].at.Sub(sends[i-1].end)
		assert.GreaterOrEqual(t, pause, want, "pause before send %d", i)
		assert.Less(t, pause, want+pauseSlack, "pause before send %d", i)
		want = min(2*want, unlockPauseMax)
	}
}

// An unlock whose replies are lost is sent again, under the same latch,
// until one comes back: one logical unlock, one hold released.
func TestUnlockResendsUntilAReply(t *testing.T) {
	for _, tc := range []struct {
		name     string
		afterRun bool
	}{{"lost after the script ran", true}, {"lost before it was sent", false}} {
		t.Run(tc.name, func(t *testing.T) {
			c, tp := newClient(t)
			ctx := testCtx(t)
			name := lockName(t)
			l := New(c, &testKind, name)
			_, holder, err := l.owner(ctx, report.OpAcquire)
			require.NoError(t, err)
			require.NoError(t, l.Lock(ctx))
			require.NoError(t, l.Lock(ctx))

			loseUnlocks(tp, 3, tc.afterRun)
			require.NoError(t, l.Unlock(ctx))
			sends := tp.sent(script.Unlock())
			require.Len(t, sends, 4)
			checkResends(t, sends)
			assert.Equal(t, 1, holdCount(t, tp, name, holder), "one hold released on the server")
			assert.Equal(t, 1, runtime.Of(c).Renewal.Holds(name, holder), "and one in the Client")
			latch := sends[0].keys()[2]
			require.Eventually(t, func() bool { return !exists(t, tp, latch) }, 2*time.Second, 5*time.Millisecond, "latch left")

			require.NoError(t, l.Unlock(ctx))
			assert.False(t, exists(t, tp, name))
			assert.Zero(t, c.Stats().Holds)
		})
	}
}

// The last hold's release is published once, however often it is sent.
func TestResentReleasePublishesOnce(t *testing.T) {
	c, tp := newClient(t)
	ctx := testCtx(t)
	l := New(c, &testKind, lockName(t))
	require.NoError(t, l.Lock(ctx))

	sub := tp.Client
	var mu sync.Mutex
	var msgs []string
	subCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = sub.Receive(subCtx, sub.B().Subscribe().Channel(l.channel).Build(), func(m rueidis.PubSubMessage) {
			mu.Lock()
			msgs = append(msgs, m.Message)
			mu.Unlock()
		})
	}()
	defer func() { stop(); <-done }()
	require.Eventually(t, func() bool {
		n, err := sub.Do(ctx, sub.B().PubsubNumsub().Channel(l.channel).Build()).AsIntMap()
		return err == nil && n[l.channel] == 1
	}, 2*time.Second, 5*time.Millisecond, "not subscribed")

	loseUnlocks(tp, 2, true)
	require.NoError(t, l.Unlock(ctx))
	require.Len(t, tp.sent(script.Unlock()), 3)
	assert.False(t, exists(t, tp, l.name))
	// A message published after the unlock returned arrives after its own.
	require.NoError(t, sub.Do(ctx, sub.B().Publish().Channel(l.channel).Message("end").Build()).Error())
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(msgs) > 0 && msgs[len(msgs)-1] == "end"
	}, 2*time.Second, 5*time.Millisecond, "end message not received")
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"0", "end"}, msgs)
}

// A context that ends stops the resends; the unlock fails with the
// connection error and the hold is still recorded.
func TestUnlockResendStopsWithContext(t *testing.T) {
	c, tp := newClient(t)
	ctx := testCtx(t)
	name := lockName(t)
	l := New(c, &testKind, name)
	require.NoError(t, l.Lock(ctx))

	loseUnlocks(tp, -1, false)
	// A second: long enough for a resend however late a loaded machine
	// fires the timer before it.
	const budget = time.Second
	uctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	start := time.Now()
	err := l.Unlock(uctx)
	took := time.Since(start)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	var e *interlock.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, interlock.OpRelease, e.Op)
	assert.Less(t, took, budget+pauseSlack, "the unlock outlived its context")
	sends := tp.sent(script.Unlock())
	assert.GreaterOrEqual(t, len(sends), 2) // at 0, 50, 150, 350 and 750ms
	assert.LessOrEqual(t, len(sends), 5)
	checkResends(t, sends)
	assert.True(t, exists(t, tp, name))
	assert.Equal(t, 1, c.Stats().Holds, "an unknown outcome changes nothing")

	tp.setHook(nil)
	require.NoError(t, l.Unlock(ctx))
	assert.False(t, exists(t, tp, name))
	assert.Zero(t, c.Stats().Holds)
}

// Without any reply, the resends end once the next would come more than
// unlockResendFor (5s) after the first: the connection error is returned.
func TestUnlockResendGivesUp(t *testing.T) {
	c, tp := newClient(t)
	ctx := testCtx(t)
	name := lockName(t)
	l := New(c, &testKind, name)
	require.NoError(t, l.Lock(ctx))

	loseUnlocks(tp, -1, false)
	start := time.Now()
	err := l.Unlock(ctx)
	took := time.Since(start)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	// Sends at 0, 50, 150, 350, 750, 1550, 2550, 3550 and 4550ms; then
	// 4550+1000 > 5000 ends it. A loaded machine's late timers may drop
	// the last ones, but it stops only once the next pause would end past
	// the budget: the time it took, plus that pause.
	sends := tp.sent(script.Unlock())
	require.NotEmpty(t, sends)
	assert.LessOrEqual(t, len(sends), 9)
	checkResends(t, sends)
	next := min(unlockPauseMin<<(len(sends)-1), unlockPauseMax)
	assert.Greater(t, took+next, unlockResendFor, "gave up with time for another send (%d sent)", len(sends))
	assert.Greater(t, took, unlockResendFor-unlockPauseMax)
	// No send starts after the budget, give or take one late timer; the
	// call returns after that send fails. A loaded 2-core machine adds up
	// to a few hundred ms to each.
	assert.Less(t, took, unlockResendFor+time.Second)
	last := sends[len(sends)-1].at.Sub(sends[0].at)
	assert.LessOrEqual(t, last, unlockResendFor+500*time.Millisecond, "a send after the budget")

	tp.setHook(nil)
	require.NoError(t, l.Unlock(ctx))
	assert.False(t, exists(t, tp, name))
}

// An Unlock of a hold known lost tries once, briefly, rather than
// resending to a server that does not answer, and what the hold left on
// the server is released from the clean-up queue once it answers again.
func TestUnlockAfterLossAnswersAtOnce(t *testing.T) {
	const lease = 300 * time.Millisecond
	c, tp := newClient(t, interlock.WithWatchdogTimeout(lease))
	ctx := testCtx(t)
	name := lockName(t)
	l := New(c, &testKind, name)
	owner, err := c.Owner(ctx)
	require.NoError(t, err)
	require.NoError(t, l.Lock(ctx))
	guard := l.Guard(ctx)

	tp.setHang(true) // renewals go unanswered: the hold is lost
	<-guard.Done()
	require.ErrorIs(t, context.Cause(guard), interlock.ErrLockLost)
	// The server still keeps it, and answers nothing until thawed.
	require.NoError(t, tp.Client.Do(ctx, tp.Client.B().Hset().Key(name).FieldValue().FieldValue(owner, "1").Build()).Error())
	require.NoError(t, tp.Client.Do(ctx, tp.Client.B().Pexpire().Key(name).Milliseconds(10000).Build()).Error())
	thawed := make(chan struct{})
	tp.setHook(func(ctx context.Context, r record, next func() rueidis.RedisResult) rueidis.RedisResult {
		select {
		case <-thawed:
			return next()
		case <-ctx.Done():
			return rueidis.NewErrorResult(ctx.Err())
		}
	})

	start := time.Now()
	err = l.Unlock(ctx)
	took := time.Since(start)
	require.ErrorIs(t, err, interlock.ErrNotHeld)
	assert.ErrorIs(t, err, interlock.ErrLockLost)
	// One brief try, not the resends of 5s; the second on top is for a
	// loaded machine (latency).
	assert.Less(t, took, lostUnlockWait+time.Second, "the unlock of a lost hold waited")
	err = l.Unlock(ctx)
	assert.ErrorIs(t, err, interlock.ErrLockLost, "every unlock of the lost holds knows")

	close(thawed)
	require.Eventually(t, func() bool { return !exists(t, tp, name) && c.Stats().UndoQueue == 0 }, 3*time.Second,
		10*time.Millisecond, "what the lost hold left is not released")

	// A server that answers still decides: a hold it keeps (say, one
	// this owner re-acquired while the loss was being recorded) is
	// released by the short try.
	require.NoError(t, tp.Client.Do(ctx, tp.Client.B().Hset().Key(name).FieldValue().FieldValue(owner, "1").Build()).Error())
	require.NoError(t, l.Unlock(ctx), "the unlock of a lost hold asks the server while it answers")
	assert.False(t, exists(t, tp, name))
	require.NoError(t, l.Lock(ctx), "the owner acquires again")
	require.NoError(t, l.Unlock(ctx))
}

// An Unlock from a goroutine that did not lock, while the Client holds the
// lock for the goroutine that did, says so: its error wraps ErrNotHeld and
// names both owners and the ways out, and the Observer hears it as a
// release not held, with that error. The hold stays its owner's.
func TestUnlockByAnotherOwnerSaysWhoHolds(t *testing.T) {
	var (
		mu     sync.Mutex
		events []interlock.Event
	)
	c, tp := newClient(t, interlock.WithObserver(interlock.ObserverFunc(func(_ context.Context, e interlock.Event) {
		if e.Op == interlock.OpRelease {
			mu.Lock()
			events = append(events, e)
			mu.Unlock()
		}
	})))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := lockName(t)
	fair := FairKind(string(interlock.KindFairLock))
	for _, kind := range []*Kind{&testKind, &fair} {
		l := New(c, kind, name)
		require.NoError(t, l.Lock(ctx)) // this goroutine is the owner
		holder, err := interlock.OwnerID(ctx)
		require.NoError(t, err)

		var caller int64
		var unlockErr error
		done := make(chan struct{})
		go func() {
			defer close(done)
			caller, _ = interlock.OwnerID(ctx)
			unlockErr = l.Unlock(ctx)
		}()
		<-done
		require.ErrorIs(t, unlockErr, interlock.ErrNotHeld)
		var ie *interlock.Error
		require.ErrorAs(t, unlockErr, &ie)
		assert.Equal(t, interlock.OpRelease, ie.Op)
		var oe *OtherOwnerError
		require.ErrorAs(t, unlockErr, &oe)
		assert.Equal(t, &OtherOwnerError{Owner: caller, Holders: []int64{holder}}, oe)
		msg := unlockErr.Error()
		assert.Contains(t, msg, fmt.Sprintf("owner %d holds nothing, but this Client holds the lock for owner %d", caller, holder))
		assert.Contains(t, msg, "unlock from the goroutine that locked")
		assert.Contains(t, msg, "interlock.WithOwner(ctx, id)")

		mu.Lock()
		last := events[len(events)-1]
		mu.Unlock()
		assert.Equal(t, interlock.OutcomeNotHeld, last.Outcome)
		assert.Equal(t, unlockErr, last.Err, "the event carries the error")

		assert.True(t, exists(t, tp, name), "the owner's hold stays")
		assert.Equal(t, 1, c.Stats().Holds)
		require.NoError(t, l.Unlock(ctx), "the owner unlocks")

		// With nothing held by anyone, a plain ErrNotHeld, and an event
		// without an error.
		err = l.Unlock(ctx)
		require.ErrorIs(t, err, interlock.ErrNotHeld)
		assert.NotErrorAs(t, err, &oe)
		mu.Lock()
		assert.Equal(t, interlock.OutcomeNotHeld, events[len(events)-1].Outcome)
		assert.NoError(t, events[len(events)-1].Err)
		mu.Unlock()
	}
}
