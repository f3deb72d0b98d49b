package security_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/ratelimit"
)

// rateLimitKind is the rate limiter as the ACL tests see it, with the
// line docs/operations.md gives it.
var rateLimitKind = syncKind{
	name: "ratelimit",
	acl: []string{"+hmget", "+hsetnx", "+hgetall", "+decrby", "+zadd", "+zrange", "+zrangebyscore",
		"+zremrangebyscore", "+zrem", "~{app:*", "~interlock_receipt:{app:*"},
	exercise: exerciseRateLimit,
}

// rateLimitUntested are the entries the exercise cannot show to be
// needed: ZREM only takes back an acquisition whose reply was lost.
var rateLimitUntested = map[string]bool{"+zrem": true}

func exerciseRateLimit(ctx context.Context, a, b *interlock.Client, name string) error {
	k := stepper("ratelimit")
	la, lb := ratelimit.New(a, name), ratelimit.New(b, name)
	ok, err := la.TrySetRate(ctx, ratelimit.Config{Rate: 1, Interval: 200 * time.Millisecond})
	if err := k.want("TrySetRate", ok, true, err); err != nil {
		return err
	}
	ok, err = la.TryAcquire(ctx, 1, 0)
	if err := k.want("TryAcquire", ok, true, err); err != nil {
		return err
	}
	ok, err = lb.TryAcquire(ctx, 1, 0)
	if err := k.want("TryAcquire refused", ok, false, err); err != nil {
		return err
	}
	if err := k.step("Acquire after the interval", lb.Acquire(ctx, 1)); err != nil {
		return err
	}
	n, err := la.AvailablePermits(ctx)
	if err := k.want("AvailablePermits", n, int64(0), err); err != nil {
		return err
	}
	cfg, err := lb.Config(ctx)
	if err := k.want("Config", cfg.Rate, int64(1), err); err != nil {
		return err
	}
	if err := k.step("SetRate", la.SetRate(ctx, ratelimit.Config{Type: ratelimit.PerClient, Rate: 2, Interval: time.Second, KeepAlive: time.Minute})); err != nil {
		return err
	}
	ok, err = lb.TryAcquire(ctx, 2, 0)
	if err := k.want("TryAcquire per client", ok, true, err); err != nil {
		return err
	}
	ok, err = la.Delete(ctx)
	return k.want("Delete", ok, true, err)
}

// TestMinimalACLRateLimit runs the rate limiter as a user restricted to
// the reentrant lock's line plus the rate limiter's: no NOPERM anywhere.
func TestMinimalACLRateLimit(t *testing.T) {
	redistest.RequireProcess(t)
	srv := redistest.Standalone(t)
	k := rateLimitKind
	run := runSync(t, srv, "locker-"+k.name, syncRules(k, -1), k, "app:acl:"+k.name)
	require.NoError(t, run.err)
	assert.Empty(t, run.denials, "ACL LOG")
	assert.Empty(t, run.observed, "errors the Observer heard of")
}

// TestMinimalACLRateLimitNeeded takes one entry of the rate limiter's line
// away at a time: the exercise must then run into a refusal.
func TestMinimalACLRateLimitNeeded(t *testing.T) {
	redistest.RequireProcess(t)
	srv := redistest.Standalone(t)
	k := rateLimitKind
	for i, missing := range k.acl {
		if rateLimitUntested[missing] {
			continue
		}
		t.Run(missing, func(t *testing.T) {
			user := fmt.Sprintf("short-%s-%d", k.name, i)
			run := runSync(t, srv, user, syncRules(k, i), k, fmt.Sprintf("app:short:%s:%d", k.name, i))
			assert.NotEmpty(t, run.denials, "without %s, a refusal in the ACL LOG", missing)
			assert.Error(t, run.err, "without %s, the exercise fails", missing)
			t.Logf("without %s: %v", missing, run.err)
		})
	}
}
