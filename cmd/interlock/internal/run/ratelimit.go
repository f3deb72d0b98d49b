package run

import (
	"context"
	"time"

	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/ratelimitcmd"
	"github.com/interlock-go/interlock/ratelimit"
)

// rateLocker takes n permits of an RRateLimiter before CMD runs. A rate
// limiter's permits are never given back (they leave its window an
// interval after they were taken), so there is nothing to release and
// nothing to lose.
type rateLocker struct {
	l *ratelimit.Limiter
	n int
}

// acquire first refuses a limiter that is not set, is PER_CLIENT, or has a
// rate below n, then takes the permits as --wait says.
func (l *rateLocker) acquire(ctx context.Context, wait cli.DurationFlag, _ time.Duration) (bool, error) {
	if err := ratelimitcmd.CheckAcquire(ctx, l.l, l.n, "--permits"); err != nil {
		return false, err
	}
	return ratelimitcmd.Take(ctx, l.l, l.n, wait)
}

func (l *rateLocker) unlock(context.Context) error              { return nil }
func (l *rateLocker) guard(ctx context.Context) context.Context { return ctx }
func (l *rateLocker) env() []string                             { return nil }
