package run

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/semaphore"
)

// envPermitIDs names the variable that gives CMD the ids of the permits
// run holds (--kind expirable-semaphore), comma-separated.
const envPermitIDs = "INTERLOCK_PERMIT_IDS"

// semaphoreLocker holds n permits of an RSemaphore while CMD runs. The
// semaphore records no holder, so nothing can take the permits away: the
// hold is never lost.
type semaphoreLocker struct {
	s *semaphore.Semaphore
	n int
}

func (l *semaphoreLocker) acquire(ctx context.Context, wait cli.DurationFlag, _ time.Duration) (bool, error) {
	if wait.Given {
		return l.s.TryAcquire(ctx, l.n, wait.D)
	}
	err := l.s.Acquire(ctx, l.n)
	return err == nil, err
}

func (l *semaphoreLocker) unlock(ctx context.Context) error          { return l.s.Release(ctx, l.n) }
func (l *semaphoreLocker) guard(ctx context.Context) context.Context { return ctx }
func (l *semaphoreLocker) env() []string                             { return nil }

// expirableLocker holds n permits of an RPermitExpirableSemaphore while
// CMD runs, with a lease or renewed by the watchdog, and gives CMD their
// ids.
type expirableLocker struct {
	e   *semaphore.Expirable
	n   int
	ids []semaphore.PermitID // the permits acquired; nil before
}

func (l *expirableLocker) acquire(ctx context.Context, wait cli.DurationFlag, lease time.Duration) (bool, error) {
	var (
		ids []semaphore.PermitID
		ok  = true
		err error
	)
	if wait.Given {
		ids, ok, err = l.e.TryAcquire(ctx, l.n, wait.D, lease)
	} else {
		ids, err = l.e.Acquire(ctx, l.n, lease)
	}
	if err != nil || !ok {
		return false, err
	}
	l.ids = ids
	return true, nil
}

// unlock releases every permit at once. When one of them is gone, the
// others are released one by one, so that none is kept until its lease
// ends, and the error matches interlock.ErrNotHeld.
func (l *expirableLocker) unlock(ctx context.Context) error {
	err := l.e.Release(ctx, l.ids...)
	if !errors.Is(err, semaphore.ErrUnknownPermit) && !errors.Is(err, semaphore.ErrPermitExpired) {
		return err
	}
	if len(l.ids) > 1 {
		for _, id := range l.ids {
			if _, rerr := l.e.TryRelease(ctx, id); rerr != nil {
				return rerr
			}
		}
	}
	return fmt.Errorf("%w: %w", interlock.ErrNotHeld, err)
}

func (l *expirableLocker) guard(ctx context.Context) context.Context {
	return l.e.Guard(ctx, l.ids...)
}

func (l *expirableLocker) env() []string {
	hex := make([]string, len(l.ids))
	for i, id := range l.ids {
		hex[i] = id.String()
	}
	return []string{envPermitIDs + "=" + strings.Join(hex, ",")}
}
