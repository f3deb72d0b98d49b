package run

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/kinds"
	"github.com/interlock-go/interlock/fenced"
	"github.com/interlock-go/interlock/ratelimit"
	"github.com/interlock-go/interlock/semaphore"
)

// runKinds are the values of run's --kind: the locks, the spin lock (whose
// data is RLock's, so unlock --force needs no kind of its own for it), then
// the semaphores (semaphore.go) and the rate limiter (ratelimit.go).
var runKinds = append(slices.Clip(kinds.Locks), kinds.Spin, kinds.Semaphore, kinds.Expirable, kinds.RateLimit)

// envFenceToken names the variable that gives CMD the fencing token of
// run's acquisition (--kind fenced).
const envFenceToken = "INTERLOCK_FENCE_TOKEN"

// locker is one kind of lock, or a semaphore's permits, as run uses it:
// one code path (acquire, supervise, release) drives every kind through
// it.
type locker interface {
	// acquire takes the lock as --wait and --lease say: with wait not
	// set, until it is acquired or ctx ends; with wait set, for up to
	// wait.D (0: one attempt), reporting false when it is still busy.
	// A lease of 0 is a watchdog hold.
	acquire(ctx context.Context, wait cli.DurationFlag, lease time.Duration) (bool, error)
	// unlock releases the hold acquire took. An error matching
	// interlock.ErrNotHeld means the hold (or one of its permits) was
	// gone already.
	unlock(ctx context.Context) error
	// guard returns a context cancelled when the hold is lost.
	guard(ctx context.Context) context.Context
	// env is what CMD gets in its environment besides INTERLOCK_LOCK.
	env() []string
}

// newLocker returns the locker of kind (one of runKinds) for the lock or
// semaphore called name; permits is how many permits a semaphore kind
// takes.
func newLocker(c *interlock.Client, kind, name string, permits int) (locker, error) {
	switch kind {
	case kinds.Semaphore:
		return &semaphoreLocker{s: semaphore.New(c, name), n: permits}, nil
	case kinds.Expirable:
		return &expirableLocker{e: semaphore.NewExpirable(c, name), n: permits}, nil
	case kinds.RateLimit:
		return &rateLocker{l: ratelimit.New(c, name), n: permits}, nil
	}
	m, err := kinds.NewLock(c, kind, name)
	if err != nil {
		return nil, err
	}
	if f, ok := m.(*fenced.Mutex); ok {
		return &fencedLocker{mutexLocker: mutexLocker{m: m}, f: f}, nil
	}
	return &mutexLocker{m: m}, nil
}

// mutexLocker is the locker of every kind: an interlock.Locker.
type mutexLocker struct {
	m interlock.Locker
}

func (l *mutexLocker) acquire(ctx context.Context, wait cli.DurationFlag, lease time.Duration) (bool, error) {
	return acquireWith(ctx, l.m, wait, lease)
}

// acquirer is what run's flags choose between: a lock or a multi-lock.
type acquirer interface {
	Lock(ctx context.Context) error
	LockLease(ctx context.Context, lease time.Duration) error
	TryLock(ctx context.Context, wait, lease time.Duration) (bool, error)
}

// acquireWith takes m as --wait and --lease say: TryLock with a wait, else
// LockLease with a lease, else Lock.
func acquireWith(ctx context.Context, m acquirer, wait cli.DurationFlag, lease time.Duration) (bool, error) {
	switch {
	case wait.Given:
		return m.TryLock(ctx, wait.D, lease)
	case lease > 0:
		err := m.LockLease(ctx, lease)
		return err == nil, err
	default:
		err := m.Lock(ctx)
		return err == nil, err
	}
}

func (l *mutexLocker) unlock(ctx context.Context) error          { return l.m.Unlock(ctx) }
func (l *mutexLocker) guard(ctx context.Context) context.Context { return l.m.Guard(ctx) }
func (l *mutexLocker) env() []string                             { return nil }

// fencedLocker is the fenced lock's locker: it acquires with the methods
// that return the fencing token, and gives the token to CMD.
type fencedLocker struct {
	mutexLocker
	f     *fenced.Mutex
	token uint64 // the token of the acquisition; 0 before
}

func (l *fencedLocker) acquire(ctx context.Context, wait cli.DurationFlag, lease time.Duration) (bool, error) {
	var (
		token uint64
		ok    = true
		err   error
	)
	switch {
	case wait.Given:
		token, ok, err = l.f.TryLockToken(ctx, wait.D, lease)
	case lease > 0:
		token, err = l.f.LockLeaseToken(ctx, lease)
	default:
		token, err = l.f.LockToken(ctx)
	}
	if err != nil {
		return false, err
	}
	l.token = token
	return ok, nil
}

func (l *fencedLocker) env() []string {
	return []string{envFenceToken + "=" + strconv.FormatUint(l.token, 10)}
}
