package multilock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/multilock"
)

// member is a Locker whose answers are set by the test: a try that takes
// it (held) or fails with tryErr, and an unlock and IsHeld that fail with
// unlockErr and heldErr. It sends nothing.
type member struct {
	name                       string
	held                       bool
	tryErr, unlockErr, heldErr error
}

func (f *member) Name() string                                   { return f.name }
func (f *member) Lock(ctx context.Context) error                 { return f.tryErr }
func (f *member) LockLease(context.Context, time.Duration) error { return f.tryErr }
func (f *member) Unlock(context.Context) error                   { return f.unlockErr }
func (f *member) ForceUnlock(context.Context) (bool, error)      { return false, nil }
func (f *member) Guard(ctx context.Context) context.Context      { return ctx }
func (f *member) Remaining(context.Context) time.Duration        { return 0 }
func (f *member) IsLocked(context.Context) (bool, error)         { return f.held, f.heldErr }
func (f *member) IsHeld(context.Context) (bool, error)           { return f.held, f.heldErr }
func (f *member) HoldCount(context.Context) (int, error)         { return 0, f.heldErr }
func (f *member) TTL(context.Context) (time.Duration, error)     { return 0, nil }
func (f *member) Extend(context.Context, time.Duration) error    { return f.heldErr }

func (f *member) TryLock(ctx context.Context, _, _ time.Duration) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	return f.held && f.tryErr == nil, f.tryErr
}

// memberErr is the error a member of kind rlock fails op with.
func memberErr(op interlock.Op, name string) error {
	return &interlock.Error{Kind: interlock.KindRLock, Op: op, Name: name, Err: errors.New("boom")}
}

// Every error of a multi-lock is a member's own, a context's, or an
// *interlock.Error of the multi-lock (wrapping several members' errors,
// each kept whole); never a bare join.
func TestErrorShapes(t *testing.T) {
	ctx := redistest.Context(t)
	lockErr := func(t *testing.T, err error, kind interlock.Kind, op interlock.Op, name string) *interlock.Error {
		t.Helper()
		e, ok := err.(*interlock.Error)
		require.True(t, ok, "%T: %v", err, err)
		assert.Equal(t, kind, e.Kind)
		assert.Equal(t, op, e.Op)
		assert.Equal(t, name, e.Name)
		return e
	}

	t.Run("one member's unlock fails", func(t *testing.T) {
		a := &member{name: "a", unlockErr: memberErr(interlock.OpRelease, "a")}
		err := multilock.New(a, &member{name: "b"}).Unlock(ctx)
		assert.Same(t, a.unlockErr, err, "the member's error as it is")
	})
	t.Run("several members' unlocks fail", func(t *testing.T) {
		a := &member{name: "a", unlockErr: memberErr(interlock.OpRelease, "a")}
		b := &member{name: "b", unlockErr: memberErr(interlock.OpRelease, "b")}
		err := multilock.New(a, b).Unlock(ctx)
		lockErr(t, err, interlock.KindMultiLock, interlock.OpRelease, "a,b")
		assert.ErrorIs(t, err, a.unlockErr)
		assert.ErrorIs(t, err, b.unlockErr)
		assert.Equal(t, "multilock: release a,b: "+a.unlockErr.Error()+"\n"+b.unlockErr.Error(), err.Error())
	})
	t.Run("a member's try fails with a bare error", func(t *testing.T) {
		cause := errors.New("connection refused")
		ok, err := multilock.New(&member{name: "a", held: true}, &member{name: "b", tryErr: cause}).TryLock(ctx, 0, 0)
		assert.False(t, ok)
		e := lockErr(t, err, interlock.KindMultiLock, interlock.OpAcquire, "a,b")
		assert.Same(t, cause, e.Err)
	})
	t.Run("a member's try fails, and the undo too", func(t *testing.T) {
		a := &member{name: "a", held: true, unlockErr: memberErr(interlock.OpRelease, "a")}
		b := &member{name: "b", tryErr: memberErr(interlock.OpAcquire, "b")}
		_, err := multilock.New(a, b).TryLock(ctx, 0, 0)
		lockErr(t, err, interlock.KindMultiLock, interlock.OpAcquire, "a,b")
		assert.ErrorIs(t, err, b.tryErr)
		assert.ErrorIs(t, err, a.unlockErr)
		assert.Equal(t, "multilock: acquire a,b: "+b.tryErr.Error()+"\n"+a.unlockErr.Error(), err.Error(), "the try's error first")
	})
	t.Run("the context ends", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := multilock.NewRedLock(&member{name: "a"}, &member{name: "b"}, &member{name: "c"}).TryLock(cctx, 0, 0)
		assert.Same(t, context.Canceled, err, "the context's error as it is")
	})
	t.Run("members' IsHeld fails", func(t *testing.T) {
		a := &member{name: "a", heldErr: memberErr(interlock.OpInspect, "a")}
		b := &member{name: "b", heldErr: memberErr(interlock.OpInspect, "b")}
		_, err := multilock.New(a, b).IsHeld(ctx)
		lockErr(t, err, interlock.KindMultiLock, interlock.OpInspect, "a,b")
		assert.ErrorIs(t, err, a.heldErr)
		assert.ErrorIs(t, err, b.heldErr)
	})
}
