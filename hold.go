package interlock

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/interlock-go/interlock/internal/runtime"
)

// Hold is one acquisition of a Locker together with the owner that made
// it: its methods act for that owner from whatever goroutine calls them,
// so a lock taken on one goroutine can be released on another. Lock,
// LockLease and TryLock return one. It is safe for concurrent use.
type Hold struct {
	l     Locker
	owner int64

	mu       sync.Mutex
	released bool
	err      error // the first Unlock's
}

// Lock is l.Lock for the owner ctx names now (OwnerID: the calling
// goroutine, or WithOwner's id), and returns the hold that carries it. The
// owner string on the server is the same as l.Lock's.
func Lock(ctx context.Context, l Locker) (*Hold, error) {
	h, err := newHold(ctx, l)
	if err != nil {
		return nil, err
	}
	if err := l.Lock(h.ctx(ctx)); err != nil {
		return nil, err
	}
	return h, nil
}

// LockLease is l.LockLease for the owner ctx names now, as Lock.
func LockLease(ctx context.Context, l Locker, lease time.Duration) (*Hold, error) {
	h, err := newHold(ctx, l)
	if err != nil {
		return nil, err
	}
	if err := l.LockLease(h.ctx(ctx), lease); err != nil {
		return nil, err
	}
	return h, nil
}

// TryLock is l.TryLock for the owner ctx names now, as Lock; the Hold is
// nil unless it acquired.
func TryLock(ctx context.Context, l Locker, wait, lease time.Duration) (*Hold, bool, error) {
	h, err := newHold(ctx, l)
	if err != nil {
		return nil, false, err
	}
	ok, err := l.TryLock(h.ctx(ctx), wait, lease)
	if !ok || err != nil {
		return nil, false, err
	}
	return h, true, nil
}

func newHold(ctx context.Context, l Locker) (*Hold, error) {
	if l == nil {
		return nil, &Error{Kind: KindClient, Op: OpAcquire, Err: fmt.Errorf("%w: nil Locker", ErrInvalid)}
	}
	id, err := OwnerID(ctx)
	if err != nil {
		return nil, err
	}
	return &Hold{l: l, owner: id}, nil
}

// ctx is ctx acting for the hold's owner.
func (h *Hold) ctx(ctx context.Context) context.Context { return WithOwner(ctx, h.owner) }

// Unlock releases the hold, as Locker.Unlock does for its owner, once:
// later calls send nothing and return what the first returned, so a
// deferred Unlock after an explicit one releases no other hold.
func (h *Hold) Unlock(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.released {
		h.released = true
		h.err = h.l.Unlock(h.ctx(ctx))
	}
	return h.err
}

// Extend gives the hold's owner a new lease, as Locker.Extend does: the
// lock stays held until lease from now, or ErrNotHeld says it is gone.
func (h *Hold) Extend(ctx context.Context, lease time.Duration) error {
	return h.l.Extend(h.ctx(ctx), lease)
}

// Guard returns a context derived from ctx that ends with the hold, as
// Locker.Guard says for its owner. The context does not carry the hold's
// owner: locks taken with it act for whoever ctx names.
func (h *Hold) Guard(ctx context.Context) context.Context {
	return runtime.OwnerOf(h.l.Guard(h.ctx(ctx)), ctx)
}

// Remaining returns how long the hold's owner still certainly holds the
// lock, as Locker.Remaining says: 0 once the owner holds nothing (this
// hold released or lost, and no other). It sends nothing.
func (h *Hold) Remaining() time.Duration {
	return h.l.Remaining(h.ctx(context.Background()))
}

// Owner returns the owner id the hold acts for: WithOwner(ctx, h.Owner())
// makes any other call act for it too (IsHeld, HoldCount, a nested Lock).
func (h *Hold) Owner() int64 { return h.owner }

// Locker returns the lock the hold is of.
func (h *Hold) Locker() Locker { return h.l }
