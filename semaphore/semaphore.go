package semaphore

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/lockcore"
	"github.com/interlock-go/interlock/internal/pubsub"
	"github.com/interlock-go/interlock/internal/report"
	"github.com/interlock-go/interlock/internal/script"
)

// The package's errors; the others are the root's.
var (
	// ErrPermitLost is wrapped by the cause of an Expirable Guard cancelled
	// because a permit was lost, with the reason (interlock.ErrLeaseExpired,
	// ErrNotRenewed, ErrKeyGone, ErrForceUnlocked, ErrMaxHold). It is not
	// interlock.ErrLockLost, but wraps it: errors.Is(cause,
	// interlock.ErrLockLost) holds for every loss, and errors.Is(cause,
	// ErrPermitLost) for a permit's only.
	ErrPermitLost error = permitLost{}
	// ErrUnknownPermit: no acquired permit has that id, and this Client
	// knows of no lease of it that ran out.
	ErrUnknownPermit = errors.New("semaphore: no such permit")
	// ErrPermitExpired: the permit's lease ran out before its release, by
	// the server's record or this Client's (see Expirable.Release).
	ErrPermitExpired = errors.New("semaphore: permit expired")
)

// permitLost is ErrPermitLost: a sentinel of its own that wraps
// interlock.ErrLockLost.
type permitLost struct{}

func (permitLost) Error() string { return "semaphore: permit lost" }
func (permitLost) Unwrap() error { return interlock.ErrLockLost }

// receiptTTL is how long a receipt outlives its operation.
var receiptTTL = lockcore.MS(lockcore.ReceiptTTL)

// Semaphore is a counting semaphore shared with Redisson's RSemaphore of
// the same name: a count of free permits, with no record of who took them.
type Semaphore struct {
	o lockcore.Object
}

// New returns the semaphore called name. A bad name or a nil client is
// reported by every method, before anything is sent.
func New(c *interlock.Client, name string) *Semaphore {
	return &Semaphore{lockcore.NewObject(c, string(interlock.KindSemaphore), name, keys.SemaphoreChannel)}
}

// Name returns the semaphore's name as given: its Redis key, unless the
// Client maps names (interlock.WithNameMapper).
func (s *Semaphore) Name() string { return s.o.Name() }

// TrySetPermits creates the semaphore with permits free, and reports
// whether it did: it changes nothing when the semaphore exists.
func (s *Semaphore) TrySetPermits(ctx context.Context, permits int) (bool, error) {
	return trySet(ctx, &s.o, permits, 0)
}

// TrySetPermitsTTL is TrySetPermits for a semaphore whose key expires
// after ttl, unless AddPermits or Drain clears the TTL (as in Redisson).
func (s *Semaphore) TrySetPermitsTTL(ctx context.Context, permits int, ttl time.Duration) (bool, error) {
	if ttl < time.Millisecond {
		return false, s.o.Invalid(report.OpSet, "ttl %v must be at least 1ms", ttl)
	}
	return trySet(ctx, &s.o, permits, ttl)
}

// trySet runs the try-set script both semaphores share.
func trySet(ctx context.Context, o *lockcore.Object, permits int, ttl time.Duration) (bool, error) {
	if err := o.Ready(report.OpSet); err != nil {
		return false, err
	}
	if permits < 0 {
		return false, o.Invalid(report.OpSet, "%d permits: the count must not be negative", permits)
	}
	pub, err := o.Publish(ctx)
	if err != nil {
		return false, o.OpErr(report.OpSet, err)
	}
	args := []string{strconv.Itoa(permits), pub}
	if ttl > 0 {
		args = append(args, lockcore.MS(ttl))
	}
	n, err := lockcore.Int(o.Run(ctx, script.SemTrySet(), []string{o.Key(), o.Channel()}, args...))
	switch {
	case err != nil:
		return false, o.Fail(ctx, report.OpSet, err)
	case n != 1:
		return false, o.Misfit(ctx, report.OpSet) // set, or another object's key
	}
	return true, nil
}

// AddPermits adds delta free permits, or takes them away when delta is
// negative; the count may go below zero. It clears the key's TTL.
func (s *Semaphore) AddPermits(ctx context.Context, delta int) error {
	return add(ctx, &s.o, script.SemAdd(), delta)
}

// add runs an add script, under a receipt.
func add(ctx context.Context, o *lockcore.Object, script *script.Script, delta int) error {
	if err := o.Ready(report.OpSet); err != nil {
		return err
	}
	if delta == 0 {
		return o.Invalid(report.OpSet, "0 permits: nothing to add")
	}
	pub, err := o.Publish(ctx)
	if err != nil {
		return o.OpErr(report.OpSet, err)
	}
	return o.Fail(ctx, report.OpSet, lockcore.Done(o.RunCounted(ctx, script, []string{o.Key(), o.Channel()}, strconv.Itoa(delta), pub)))
}

// Acquire takes n permits, waiting until they are free or ctx ends.
func (s *Semaphore) Acquire(ctx context.Context, n int) error {
	_, err := s.acquire(ctx, lockcore.Await{Permits: n, Forever: true})
	return err
}

// TryAcquire takes n permits if they are free within wait (0: at once),
// and reports whether it did.
func (s *Semaphore) TryAcquire(ctx context.Context, n int, wait time.Duration) (bool, error) {
	if wait < 0 {
		return false, s.o.Invalid(report.OpAcquire, "wait %v must not be negative", wait)
	}
	return s.acquire(ctx, lockcore.Await{Permits: n, Wait: wait})
}

// acquire waits as w says for w.Permits permits.
func (s *Semaphore) acquire(ctx context.Context, w lockcore.Await) (bool, error) {
	if err := s.check(report.OpAcquire, w.Permits); err != nil {
		return false, err
	}
	p := strconv.Itoa(w.Permits)
	w.Policy, w.HandOn = pubsub.WakeCount, w.Permits > 1
	ok, err := s.o.Wait(ctx, w, func(ctx context.Context) (bool, time.Duration, error) {
		return s.try(ctx, p)
	})
	if err != nil {
		return false, s.o.Fail(ctx, report.OpAcquire, err)
	}
	return ok, nil
}

// check validates a permit count for acquire and release.
func (s *Semaphore) check(op report.Op, n int) error {
	if err := s.o.Ready(op); err != nil {
		return err
	}
	if n < 1 {
		return s.o.Invalid(op, "%d permits: at least 1 is needed", n)
	}
	return nil
}

// try sends one acquire attempt under a fresh receipt. A reply that was
// lost, or too few replicas in safe mode, is taken back through the same
// receipt, so the permits are neither kept nor given back twice.
func (s *Semaphore) try(ctx context.Context, p string) (bool, time.Duration, error) {
	if s.o.RT().Closed() {
		return false, 0, interlock.ErrClosed
	}
	receipt := s.o.Receipt()
	res, acked := s.o.RunAcked(ctx, script.SemAcquire(), []string{s.o.Key(), receipt}, p, receiptTTL)
	n, err := res.AsInt64()
	if lockcore.Lost(err) {
		s.undo(receipt, p)
		return false, 0, err
	}
	if err != nil {
		return false, 0, err
	}
	if n != 1 {
		return false, -1, nil // no expiry to wait for: a release announces itself
	}
	if err := acked(); err != nil {
		s.undo(receipt, p)
		return false, 0, err
	}
	s.o.Answered(receipt)
	return true, 0, nil
}

// undo gives back the permits the acquisition under receipt took, if it
// took them, and makes sure a late copy of it takes nothing.
func (s *Semaphore) undo(receipt, p string) {
	s.o.UndoLater(receipt, time.Now().Add(lockcore.ReceiptTTL), func(ctx context.Context) error {
		pub, err := s.o.Publish(ctx)
		if err != nil {
			return err
		}
		return lockcore.Done(s.o.Run(ctx, script.SemUndoAcquire(), []string{s.o.Key(), s.o.Channel(), receipt}, p, pub, receiptTTL))
	})
}

// Release adds n free permits and wakes up to n waiters. Like Redisson's,
// it does not check that the caller acquired them, and creates the
// semaphore when it does not exist: ReleaseIfExists does not. Like
// interlock.Locker's Unlock it still releases given a ctx that has
// already ended, for up to 5s.
func (s *Semaphore) Release(ctx context.Context, n int) error {
	if err := s.check(report.OpRelease, n); err != nil {
		return err
	}
	rctx, cancel := lockcore.Detach(ctx)
	defer cancel()
	start := s.o.Begin()
	pub, err := s.o.Publish(rctx)
	if err == nil {
		err = lockcore.Done(s.o.RunCounted(rctx, script.SemRelease(), []string{s.o.Key(), s.o.Channel()}, strconv.Itoa(n), pub))
	}
	err = s.o.Fail(rctx, report.OpRelease, err)
	s.o.Released(ctx, start, time.Time{}, n, err == nil, err)
	return err
}

// ReleaseIfExists is Release for an existing semaphore only, and reports
// whether the semaphore existed; given an ended ctx, as Release is.
func (s *Semaphore) ReleaseIfExists(ctx context.Context, n int) (bool, error) {
	if err := s.check(report.OpRelease, n); err != nil {
		return false, err
	}
	rctx, cancel := lockcore.Detach(ctx)
	defer cancel()
	start := s.o.Begin()
	pub, err := s.o.Publish(rctx)
	var r int64
	if err == nil {
		r, err = lockcore.Int(s.o.RunCounted(rctx, script.SemReleaseIfExists(), []string{s.o.Key(), s.o.Channel()}, strconv.Itoa(n), pub))
	}
	err = s.o.Fail(rctx, report.OpRelease, err)
	s.o.Released(ctx, start, time.Time{}, n, r == 1, err)
	return r == 1, err
}

// Available returns the number of free permits, 0 when the semaphore does
// not exist; it may be negative (see AddPermits).
func (s *Semaphore) Available(ctx context.Context) (int64, error) {
	if err := s.o.Ready(report.OpInspect); err != nil {
		return 0, err
	}
	rc := s.o.RT().RC
	n, err := lockcore.Int(rc.Do(ctx, script.Resendable(rc.B().Get().Key(s.o.Key()).Build())))
	if err != nil {
		return 0, s.o.Fail(ctx, report.OpInspect, err)
	}
	return n, nil
}

// Drain takes every free permit and returns how many it took. It clears
// the key's TTL and, as in Redisson, announces nothing.
func (s *Semaphore) Drain(ctx context.Context) (int64, error) {
	if err := s.o.Ready(report.OpSet); err != nil {
		return 0, err
	}
	n, err := lockcore.Int(s.o.Run(ctx, script.SemDrain(), []string{s.o.Key()}))
	if err != nil {
		return 0, s.o.Fail(ctx, report.OpSet, err)
	}
	return n, nil
}

// TTL returns the semaphore key's time to live: 0 when the semaphore does
// not exist, NoExpiry when it never expires.
func (s *Semaphore) TTL(ctx context.Context) (time.Duration, error) {
	return pttl(ctx, &s.o, s.o.Key())
}

func pttl(ctx context.Context, o *lockcore.Object, key string) (time.Duration, error) {
	if err := o.Ready(report.OpInspect); err != nil {
		return 0, err
	}
	d, err := o.PTTL(ctx, key)
	if err != nil {
		return 0, o.OpErr(report.OpInspect, err)
	}
	return d, nil
}

// Delete removes the semaphore, and reports whether it existed; a key
// that holds no count is refused. Waiters keep waiting, as in Redisson, until
// permits are released again.
func (s *Semaphore) Delete(ctx context.Context) (bool, error) {
	return del(ctx, &s.o, s.o.Key())
}

func del(ctx context.Context, o *lockcore.Object, keys ...string) (bool, error) {
	if err := o.Ready(report.OpDelete); err != nil {
		return false, err
	}
	rc := o.RT().RC
	if _, err := o.Probe(ctx); err != nil {
		return false, o.OpErr(report.OpDelete, err)
	}
	n, err := rc.Do(ctx, rc.B().Del().Key(keys...).Build()).AsInt64() // one slot: the name's
	if err != nil {
		return false, o.OpErr(report.OpDelete, err)
	}
	return n > 0, nil
}
