//go:build unix

package ratelimitcmd

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/cmd/interlock/internal/clitest"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/ratelimit"
)

// set converges on the config given: new, equal (nothing changes, the
// window goes on), other (replaced, the window starts afresh); --if-unset
// keeps another config.
func TestRateLimitSet(t *testing.T) {
	t.Parallel()
	c, rc := clitest.NewLockClient(t)
	name := clitest.LockName(t)
	clitest.CleanupKeys(t, rc, name, keys.Suffix(name, keys.RateValueSuffix), keys.Suffix(name, keys.RatePermitsSuffix))
	l := ratelimit.New(c, name)
	url := clitest.RedisURL()

	res := clitest.Run(t, Command, "set", "--redis", url, name, "5", "1m")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Equal(t, name+": set to 5 permits per 1m0s (OVERALL, no keep-alive)\n", res.Stdout)
	require.NoError(t, l.Acquire(t.Context(), 2))

	res = clitest.Run(t, Command, "set", "--redis", url, name, "5", "60s")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Equal(t, name+": already set to 5 permits per 1m0s (OVERALL, no keep-alive); nothing changed\n", res.Stdout)
	assert.EqualValues(t, 3, must[int64](t)(l.AvailablePermits(t.Context())), "the window went on")

	res = clitest.Run(t, Command, "set", "--if-unset", "--redis", url, name, "9", "1s")
	assert.Equal(t, exit.Failure, res.Code)
	assert.Equal(t, "interlock: ratelimit set: \""+name+"\" is already set to 5 permits per 1m0s (OVERALL, no keep-alive); "+
		"nothing changed (without --if-unset, set replaces it)\n", res.Stderr)

	res = clitest.Run(t, Command, "--redis", url, "set", "--keep-alive", "2m", name, "9", "1s")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Equal(t, name+": replaced 5 permits per 1m0s (OVERALL, no keep-alive) with 9 permits per 1s (OVERALL, keep-alive 2m0s); "+
		"the window starts afresh\n", res.Stdout)
	assert.Equal(t, ratelimit.Config{Rate: 9, Interval: time.Second, KeepAlive: 2 * time.Minute}, must[ratelimit.Config](t)(l.Config(t.Context())))
	assert.EqualValues(t, 9, must[int64](t)(l.AvailablePermits(t.Context())), "setRate forgot the permits taken")
	ttl, err := rc.Do(t.Context(), rc.B().Pttl().Key(name).Build()).AsInt64()
	require.NoError(t, err)
	assert.InDelta(t, 120000, ttl, float64(clitest.Slack.Milliseconds()))

	pc := name + ":pc"
	clitest.CleanupKeys(t, rc, pc)
	res = clitest.Run(t, Command, "--redis", url, "set", "--per-client", "--if-unset", pc, "3", "250ms")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Equal(t, pc+": set to 3 permits per 250ms (PER_CLIENT, no keep-alive)\n", res.Stdout)
	assert.Equal(t, ratelimit.Config{Type: ratelimit.PerClient, Rate: 3, Interval: 250 * time.Millisecond},
		must[ratelimit.Config](t)(ratelimit.New(c, pc).Config(t.Context())))
}

// acquire takes the permits, waits for them, or gives up under --wait;
// what it cannot do is refused before anything is taken.
func TestRateLimitAcquire(t *testing.T) {
	t.Parallel()
	c, rc := clitest.NewLockClient(t)
	name := clitest.LockName(t)
	pc, unset := name+":pc", name+":unset"
	clitest.CleanupKeys(t, rc, name, keys.Suffix(name, keys.RateValueSuffix), keys.Suffix(name, keys.RatePermitsSuffix), pc, unset)
	l := ratelimit.New(c, name)
	require.NoError(t, l.SetRate(t.Context(), ratelimit.Config{Rate: 3, Interval: 400 * time.Millisecond}))
	require.NoError(t, ratelimit.New(c, pc).SetRate(t.Context(), ratelimit.Config{Type: ratelimit.PerClient, Rate: 3, Interval: time.Second}))
	url := clitest.RedisURL()

	res := clitest.Run(t, Command, "acquire", "--redis", url, "--permits", "2", name)
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Equal(t, name+": took 2 permits\n", res.Stdout)

	start := time.Now()
	res = clitest.Run(t, Command, "acquire", "--redis", url, "--permits", "2", "--wait", "50ms", name)
	assert.Equal(t, exit.Busy, res.Code, res.Stderr)
	assert.Equal(t, "interlock: rate limiter \""+name+"\": 2 permits were not free within --wait 50ms\n", res.Stderr)
	assert.Less(t, time.Since(start), 300*time.Millisecond, "gives up as soon as the permits come free too late")

	start = time.Now()
	res = clitest.Run(t, Command, "acquire", "--redis", url, "--permits", "2", name)
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Regexp(t, `^`+name+`: took 2 permits after \d+ms\n$`, res.Stdout)
	assert.Greater(t, time.Since(start), 200*time.Millisecond, "waited for the window")

	res = clitest.Run(t, Command, "acquire", "--redis", url, "--permits", "4", name)
	assert.Equal(t, exit.Usage, res.Code)
	assert.Equal(t, "interlock: --permits 4 exceeds the rate of \""+name+"\", 3 permits per 400ms (OVERALL, no keep-alive): "+
		"no acquisition can take more than the rate\n", res.Stderr)

	res = clitest.Run(t, Command, "acquire", "--redis", url, pc)
	assert.Equal(t, exit.Usage, res.Code)
	assert.Contains(t, res.Stderr, "is PER_CLIENT: each interlock process is a client of its own")
	assert.False(t, clitest.Exists(t, rc, keys.Suffix(pc, keys.RateValueSuffix)))

	res = clitest.Run(t, Command, "acquire", "--redis", url, unset)
	assert.Equal(t, exit.Failure, res.Code)
	assert.Contains(t, res.Stderr, "is not set: 'interlock ratelimit set'")
	assert.False(t, clitest.Exists(t, rc, unset))
}

// Bad input is refused with 64 before anything is sent; a name holding
// other data before anything changes.
func TestRateLimitRefusals(t *testing.T) {
	t.Parallel()
	_, rc := clitest.NewLockClient(t)
	name := clitest.LockName(t)
	str := name + ":str"
	clitest.Do(t, rc, []string{"SET " + str + " hello"}, str)
	url := clitest.RedisURL()
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"set", name, "0", "1s"}, `set: RATE "0" is not a positive integer`},
		{[]string{"set", name, "x", "1s"}, `set: RATE "x" is not a positive integer`},
		{[]string{"set", name, "1", "soon"}, `set: INTERVAL "soon" is not a duration`},
		{[]string{"set", name, "1", "500us"}, `set: INTERVAL 500µs must be whole milliseconds, at least 1ms`},
		{[]string{"set", "--keep-alive", "1s", name, "1", "2s"}, `set: --keep-alive 1s must be at least the interval 2s`},
		{[]string{"set", name, "1"}, `set: want NAME, RATE and INTERVAL, got 2 arguments`},
		{[]string{"set", "--permits", "2", name, "1", "1s"}, `--permits and --wait are for acquire only`},
		{[]string{"acquire", "--per-client", name}, `--per-client, --keep-alive and --if-unset are for set only`},
		{[]string{"acquire", "--permits", "0", name}, `--permits 0: at least 1 permit is needed`},
		{[]string{"acquire", name, "extra"}, `acquire: want NAME, got 2 arguments`},
		{[]string{"drain", name}, `unknown subcommand "drain"`},
		{[]string{}, `want a subcommand: set or acquire`},
	} {
		// An unreachable server: anything sent would fail with 69.
		res := clitest.Run(t, Command, append([]string{"--redis", "redis://127.0.0.1:1"}, tc.args...)...)
		assert.Equal(t, exit.Usage, res.Code, "%v: %s", tc.args, res.Stderr)
		assert.Contains(t, res.Stderr, tc.msg, tc.args)
	}
	for _, sub := range [][]string{{"set", str, "1", "1s"}, {"acquire", str}} {
		res := clitest.Run(t, Command, append([]string{"--redis", url}, append(sub[:1:1], sub[1:]...)...)...)
		assert.Equal(t, exit.Usage, res.Code, sub)
		assert.Contains(t, res.Stderr, `"`+str+`" is no rate limiter: it holds a string, "hello", not an integer; nothing was changed`, sub)
	}
	v, err := rc.Do(t.Context(), rc.B().Get().Key(str).Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "hello", v)
}

// must returns a function that fails t on err and returns v.
func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		require.NoError(t, err)
		return v
	}
}
