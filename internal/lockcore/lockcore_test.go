package lockcore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/pubsub"
	"github.com/interlock-go/interlock/internal/report"
	"github.com/interlock-go/interlock/internal/script"
)

// opErr wraps an operation's error once, in an *interlock.Error; context
// errors come back as themselves and a closed Client or Hub as ErrClosed.
func TestOpErr(t *testing.T) {
	c, _ := newClient(t)
	l := New(c, &testKind, "orders")
	boom := errors.New("boom")
	deadline := fmt.Errorf("sending: %w", context.DeadlineExceeded)
	already := &interlock.Error{Kind: interlock.KindFairLock, Op: interlock.OpRenew, Name: "x", Err: boom}
	inner := fmt.Errorf("while waiting: %w", already)

	assert.Same(t, context.Canceled, l.OpErr(report.OpAcquire, context.Canceled))
	assert.Equal(t, deadline, l.OpErr(report.OpAcquire, deadline))
	assert.Same(t, interlock.ErrClosed, l.OpErr(report.OpRelease, interlock.ErrClosed))
	assert.Same(t, interlock.ErrClosed, l.OpErr(report.OpRelease, pubsub.ErrClosed))
	assert.Same(t, interlock.ErrClosed, l.OpErr(report.OpRelease, fmt.Errorf("subscribing: %w", pubsub.ErrClosed)))
	assert.Same(t, already, l.OpErr(report.OpAcquire, already), "an *interlock.Error stays as is")
	assert.Equal(t, inner, l.OpErr(report.OpAcquire, inner), "so does an error that wraps one")

	err := l.OpErr(report.OpAcquire, boom)
	assert.Equal(t, &interlock.Error{Kind: interlock.KindRLock, Op: interlock.OpAcquire, Name: "orders", Err: boom}, err)
	assert.EqualError(t, err, "rlock: acquire orders: boom")
	assert.Same(t, err, l.OpErr(report.OpRelease, err), "wrapped once")

	rep := fmt.Errorf("%w: 0 of 1 replicas acknowledged within 50ms", interlock.ErrReplication)
	assert.ErrorIs(t, l.OpErr(report.OpRelease, rep), interlock.ErrReplication)
	assert.NoError(t, l.opErrIf(report.OpAcquire, nil))
	assert.Equal(t, err, l.opErrIf(report.OpAcquire, boom))
}

// An unlock of a lock the owner does not hold is an *interlock.Error
// wrapping ErrNotHeld; a hold the server lost is forgotten with it.
func TestNotHeld(t *testing.T) {
	c, tp := newClient(t)
	ctx := testCtx(t)
	name := lockName(t)
	l := New(c, &testKind, name)

	err := l.Unlock(ctx)
	require.ErrorIs(t, err, interlock.ErrNotHeld)
	var e *interlock.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, &interlock.Error{Kind: interlock.KindRLock, Op: interlock.OpRelease, Name: name, Err: interlock.ErrNotHeld}, e)
	assert.EqualError(t, err, "rlock: release "+name+": interlock: lock not held by this owner")

	require.NoError(t, l.Lock(ctx))
	guard := l.Guard(ctx)
	require.NoError(t, tp.Client.Do(ctx, tp.Client.B().Del().Key(name).Build()).Error())
	require.ErrorIs(t, l.Unlock(ctx), interlock.ErrNotHeld)
	assert.Zero(t, c.Stats().Holds, "the lost hold is forgotten")
	assert.ErrorIs(t, context.Cause(guard), interlock.ErrLockLost)

	cause := context.Cause(l.Guard(ctx))
	assert.ErrorIs(t, cause, interlock.ErrNotHeld)
	assert.ErrorAs(t, cause, &e)
	assert.Equal(t, interlock.OpGuard, e.Op)
}

// A kind's ExpiredReply ("the lock did not exist") is reported as not
// held; a reply of 0 is never taken for it.
func TestExpiredReplyIsNotHeld(t *testing.T) {
	c, tp := newClient(t)
	ctx := testCtx(t)
	queue, timeouts := Key(0), Key(1)
	kind := Kind{
		Event:   string(interlock.KindRLock),
		Channel: keys.LockChannel,
		Keys:    []func(string) string{Prefixed("redisson_lock_queue"), Prefixed("redisson_lock_timeout")},
		Unlock: Call{Script: script.FairUnlock, Keys: []Arg{Name, queue, timeouts, Channel, Latch},
			Args: []Arg{Lit("0"), Lease, Owner, Now, Publish, LatchTTL}},
		ExpiredReply: 2,
	}
	name := lockName(t)
	l := New(c, &kind, name)
	err := l.Unlock(ctx)
	require.ErrorIs(t, err, interlock.ErrNotHeld)
	var e *interlock.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, interlock.OpRelease, e.Op)
	sent := tp.sent(script.FairUnlock())
	require.Len(t, sent, 1)

	// The reentrant kind declares none: its reply 0 is a released re-entry.
	r := New(c, &testKind, name+":reentrant")
	require.NoError(t, r.Lock(ctx))
	require.NoError(t, r.Lock(ctx))
	require.NoError(t, r.Unlock(ctx))
	held, err := r.IsHeld(ctx)
	require.NoError(t, err)
	assert.True(t, held)
	require.NoError(t, r.Unlock(ctx))
}

// A bad name, a nil client or a bad argument is an error wrapping
// ErrInvalid from every method, and nothing is sent.
func TestBadInputSendsNothing(t *testing.T) {
	c, tp := newClient(t)
	ctx := testCtx(t)
	for _, l := range []Common{
		New(c, &testKind, ""),
		New(c, &testKind, "a{b"),
		New(nil, &testKind, "orders"),
		NewFair(c, &testKind, "orders", FairWait{Timeout: time.Second, Err: Invalid("wait timeout %v", time.Duration(0))}),
	} {
		assert.ErrorIs(t, l.Lock(ctx), interlock.ErrInvalid)
		assert.ErrorIs(t, l.LockLease(ctx, time.Second), interlock.ErrInvalid)
		_, err := l.TryLock(ctx, 0, 0)
		assert.ErrorIs(t, err, interlock.ErrInvalid)
		_, _, err = Acquire(ctx, &l, Request{Forever: true})
		assert.ErrorIs(t, err, interlock.ErrInvalid)
		assert.ErrorIs(t, l.Unlock(ctx), interlock.ErrInvalid)
		_, err = l.ForceUnlock(ctx)
		assert.ErrorIs(t, err, interlock.ErrInvalid)
		_, err = l.IsLocked(ctx)
		assert.ErrorIs(t, err, interlock.ErrInvalid)
		_, err = l.IsHeld(ctx)
		assert.ErrorIs(t, err, interlock.ErrInvalid)
		_, err = l.HoldCount(ctx)
		assert.ErrorIs(t, err, interlock.ErrInvalid)
		_, err = l.TTL(ctx)
		assert.ErrorIs(t, err, interlock.ErrInvalid)
		_, err = Token(ctx, &l)
		assert.ErrorIs(t, err, interlock.ErrInvalid)
		assert.ErrorIs(t, context.Cause(l.Guard(ctx)), interlock.ErrInvalid)
		assert.Zero(t, l.Remaining(ctx))
	}
	nilClient := New(nil, &testKind, "orders")
	assert.ErrorContains(t, nilClient.Lock(ctx), "rlock: acquire orders: interlock: invalid argument: nil client")

	l := New(c, &testKind, lockName(t))
	assert.ErrorIs(t, l.LockLease(ctx, 500*time.Microsecond), interlock.ErrInvalid)
	for _, wl := range [][2]time.Duration{{-time.Second, 0}, {0, -time.Second}, {0, 500 * time.Microsecond}} {
		_, err := l.TryLock(ctx, wl[0], wl[1])
		assert.ErrorIs(t, err, interlock.ErrInvalid, "wait %v lease %v", wl[0], wl[1])
	}
	_, _, err := Acquire(ctx, &l, Request{Lease: 500 * time.Microsecond, Forever: true})
	assert.ErrorIs(t, err, interlock.ErrInvalid)
	fair := Kind{Event: string(interlock.KindFairLock), Fair: &Fair{}}
	f := New(c, &fair, lockName(t))
	_, err = f.TryLock(ctx, 500*time.Microsecond, 0)
	assert.ErrorIs(t, err, interlock.ErrInvalid, "a fair wait below 1ms")

	assert.Empty(t, tp.sent(nil), "commands sent for bad input")
}

// Once the Client is closed every operation returns ErrClosed itself.
func TestClosedClient(t *testing.T) {
	c, tp := newClient(t)
	ctx := testCtx(t)
	l := New(c, &testKind, lockName(t))
	require.NoError(t, c.Close())
	n := len(tp.sent(nil))
	assert.Same(t, interlock.ErrClosed, l.Lock(ctx))
	_, err := l.TryLock(ctx, 0, 0)
	assert.Same(t, interlock.ErrClosed, err)
	assert.Same(t, interlock.ErrClosed, l.Unlock(ctx))
	_, err = l.ForceUnlock(ctx)
	assert.Same(t, interlock.ErrClosed, err)
	assert.Len(t, tp.sent(nil), n, "nothing sent after Close")
}
