//go:build unix

package ls

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/cmd/interlock/internal/clitest"
	"github.com/interlock-go/interlock/cmd/interlock/internal/kinds"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/ratelimit"
)

// Rate limiters are listed as one entry each, with their config and free
// permits; a PER_CLIENT limiter's per-client keys belong to it, and its
// state keys are never counters of their own.
func TestLsRateLimiters(t *testing.T) {
	t.Parallel()
	c1, rc := clitest.NewLockClient(t)
	c2, _ := clitest.NewLockClient(t)
	base := clitest.LockName(t)
	overall, perClient, braced := base+":overall", base+":pc", "{"+base+"}:rl"
	var cleanup []string
	for _, name := range []string{overall, perClient, braced} {
		cleanup = append(cleanup, keys.RateLimiter(name, c1.ID())...)
		cleanup = append(cleanup, keys.RateLimiter(name, c2.ID())...)
	}
	clitest.CleanupKeys(t, rc, cleanup...)
	ctx := t.Context()
	o := ratelimit.New(c1, overall)
	require.NoError(t, o.SetRate(ctx, ratelimit.Config{Rate: 10, Interval: time.Minute}))
	require.NoError(t, o.Acquire(ctx, 4))
	require.NoError(t, ratelimit.New(c1, perClient).SetRate(ctx, ratelimit.Config{Type: ratelimit.PerClient, Rate: 3, Interval: time.Minute}))
	require.NoError(t, ratelimit.New(c1, perClient).Acquire(ctx, 1))
	require.NoError(t, ratelimit.New(c2, perClient).Acquire(ctx, 2))
	b := ratelimit.New(c1, braced)
	require.NoError(t, b.SetRate(ctx, ratelimit.Config{Rate: 2, Interval: time.Minute, KeepAlive: time.Hour}))
	require.NoError(t, b.Acquire(ctx, 1))

	for _, counters := range []bool{false, true} {
		args := []string{"--redis", clitest.RedisURL(), "--progress", "off", base + "*"}
		if counters {
			args = append(args, "--counters")
			args[len(args)-2], args[len(args)-1] = args[len(args)-1], args[len(args)-2]
		}
		l, byName := lsJSON(t, args...)
		require.Len(t, l.Synchronizers, 2, "%+v", l.Synchronizers) // braced starts with "{"
		e := byName[overall]
		assert.Equal(t, kinds.RateLimit, e.Kind)
		require.NotNil(t, e.RateLimit)
		assert.EqualValues(t, 6, e.RateLimit.Overall.Free)
		assert.Empty(t, e.Flags)
		e = byName[perClient]
		assert.Equal(t, kinds.RateLimit, e.Kind)
		require.Len(t, e.RateLimit.Clients, 2)
		for _, w := range e.RateLimit.Clients {
			assert.Contains(t, []string{c1.ID(), c2.ID()}, w.ClientID)
		}
	}
	_, byName := lsJSON(t, "--redis", clitest.RedisURL(), "--progress", "off", "{"+base+"}*")
	assert.Equal(t, kinds.RateLimit, byName[braced].Kind)

	res := clitest.Run(t, Command, "--redis", clitest.RedisURL(), "--progress", "off", base+"*")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Regexp(t, `\n`+overall+` +ratelimit +no expiry +OVERALL 10 per 1m0s: 6 free, 4 taken +- +-\n`, res.Stdout)
	assert.Regexp(t, `\n`+perClient+` +ratelimit +no expiry +PER_CLIENT 3 per 1m0s each: 2 clients +- +-\n`, res.Stdout)
}

// A rate limiter's state keys name it; a client's name it with the
// client's id.
func TestLsRateStateNames(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"api", "{api}:x", "a{b}c"} {
		for _, k := range keys.RateLimiter(name, clitest.JavaA)[1:] {
			got, client, _, ok := rateStateName(k)
			assert.True(t, ok, k)
			assert.Equal(t, name, got, k)
			if k == keys.Suffix(keys.Suffix(name, keys.RateValueSuffix), clitest.JavaA) ||
				k == keys.Suffix(keys.Suffix(name, keys.RatePermitsSuffix), clitest.JavaA) {
				assert.Equal(t, clitest.JavaA, client, k)
			} else {
				assert.Empty(t, client, k)
			}
		}
	}
	for _, k := range []string{"api:value", "{api}:value:user", "{api}:other"} {
		_, _, _, ok := rateStateName(k)
		assert.False(t, ok, k)
	}
}
