//go:build unix

package main

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/cmd/interlock/internal/clitest"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/cmd/interlock/internal/inspect"
	"github.com/interlock-go/interlock/cmd/interlock/internal/kinds"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/latch"
	"github.com/interlock-go/interlock/semaphore"
)

// permitsKey is an expirable semaphore's sorted set of acquired permits.
func permitsKey(name string) string { return keys.Suffix(name, keys.PermitsSuffix) }

// newSemaphore returns a semaphore with permits free, deleted when the
// test ends.
func newSemaphore(t *testing.T, permits int) (*semaphore.Semaphore, rueidis.Client) {
	t.Helper()
	c, rc := clitest.NewLockClient(t)
	s := semaphore.New(c, clitest.LockName(t))
	clitest.CleanupKeys(t, rc, s.Name())
	ok, err := s.TrySetPermits(t.Context(), permits)
	require.NoError(t, err)
	require.True(t, ok)
	return s, rc
}

// run --kind semaphore holds its permits while CMD runs (CMD inspects
// them), gives them back after, and exits 75 when they are busy past
// --wait.
func TestRunSemaphore(t *testing.T) {
	t.Parallel()
	s, rc := newSemaphore(t, 3)
	name := s.Name()
	res := clitest.RunBinary(t, "", "run", "--redis", clitest.RedisURL(), "--kind", "semaphore", "--permits", "2", name, "--",
		clitest.Binary(), "inspect", "--json", "--kind", "semaphore", "--redis", clitest.RedisURL(), name)
	require.Equal(t, 0, res.Code, res.Stderr)
	var r inspect.Report
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &r), res.Stdout)
	assert.Equal(t, kinds.Semaphore, r.Kind)
	require.NotNil(t, r.Permits)
	assert.Equal(t, int64(1), *r.Permits, "2 of 3 permits were held while CMD ran")
	assert.Equal(t, int64(3), clitest.Available(t, rc, name), "run gives the permits back when CMD exits")

	// All permits taken by another holder: busy.
	require.NoError(t, s.Acquire(t.Context(), 3))
	res = clitest.RunBinary(t, "", "run", "--redis", clitest.RedisURL(), "--kind", "semaphore", "--wait", "200ms", name, "--", "echo", "must not run")
	assert.Equal(t, exit.Busy, res.Code, res.Stderr)
	assert.Empty(t, res.Stdout)
	assert.Contains(t, res.Stderr, `interlock: semaphore "`+name+`" is busy: 1 permit was not free within --wait 200ms`)
	assert.GreaterOrEqual(t, res.Took, 200*time.Millisecond)
	assert.Less(t, res.Took, 200*time.Millisecond+clitest.Slack)
	res = clitest.RunBinary(t, "", "run", "--redis", clitest.RedisURL(), "--kind", "semaphore", "--wait", "0", name, "--", "true")
	assert.Equal(t, exit.Busy, res.Code, "--wait 0 makes one attempt")

	// A waiter gets the permits once they are released.
	cmd := clitest.Command("run", "--redis", clitest.RedisURL(), "--kind", "semaphore", "--permits", "2", name, "--", "true")
	var stderr clitest.SyncBuffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	channel := keys.SemaphoreChannel(name)
	require.Eventually(t, func() bool {
		n, err := rc.Do(t.Context(), rc.B().PubsubNumsub().Channel(channel).Build()).AsIntMap()
		return err == nil && n[channel] > 0
	}, 10*time.Second, 10*time.Millisecond, "run waits on the semaphore's channel")
	require.NoError(t, s.Release(t.Context(), 3))
	assert.Equal(t, 0, clitest.Wait(t, cmd), stderr.String())
	assert.Equal(t, int64(3), clitest.Available(t, rc, name))
}

// run --kind expirable-semaphore gives CMD the ids of its permits, held by
// the watchdog or with --lease, and releases them when CMD exits.
func TestRunExpirableSemaphore(t *testing.T) {
	t.Parallel()
	c, rc := clitest.NewLockClient(t)
	name := clitest.LockName(t)
	e := semaphore.NewExpirable(c, name)
	clitest.CleanupKeys(t, rc, name, permitsKey(name))
	ok, err := e.TrySetPermits(t.Context(), 3)
	require.NoError(t, err)
	require.True(t, ok)

	for _, tc := range []struct {
		name  string
		args  []string
		lease time.Duration
	}{
		{"watchdog", nil, interlock.DefaultWatchdogTimeout},
		{"lease", []string{"--lease", "10s"}, 10 * time.Second},
	} {
		args := append([]string{"run", "--redis", clitest.RedisURL(), "--kind", "expirable-semaphore", "--permits", "2"}, tc.args...)
		args = append(args, name, "--", "sh", "-c", `echo "$INTERLOCK_PERMIT_IDS"; exec "$0" inspect --json --redis "$1" "$2"`,
			clitest.Binary(), clitest.RedisURL(), name)
		res := clitest.RunBinary(t, "", args...)
		require.Equal(t, 0, res.Code, "%s: %s", tc.name, res.Stderr)
		line, report, _ := strings.Cut(res.Stdout, "\n")
		ids := strings.Split(line, ",")
		require.Len(t, ids, 2, tc.name)
		for _, id := range ids {
			_, err := semaphore.ParsePermitID(id)
			require.NoError(t, err, tc.name)
			assert.Equal(t, strings.ToLower(id), id, "lower-case hex")
		}
		var r inspect.Report
		require.NoError(t, json.Unmarshal([]byte(report), &r), report)
		assert.Equal(t, kinds.Expirable, r.Kind, tc.name)
		require.NotNil(t, r.Permits)
		assert.Equal(t, int64(1), *r.Permits, tc.name)
		require.Len(t, r.Acquired, 2, tc.name)
		for _, p := range r.Acquired {
			assert.Contains(t, ids, p.ID, tc.name)
			assert.InDelta(t, tc.lease.Milliseconds(), p.LeaseLeftMs, float64(clitest.Slack.Milliseconds()), tc.name)
			assert.False(t, p.Expired)
		}
		assert.Empty(t, r.Notes, tc.name)

		assert.Equal(t, int64(3), clitest.Available(t, rc, name), "%s: the permits are back", tc.name)
		assert.False(t, clitest.Exists(t, rc, permitsKey(name)), "%s: none is acquired", tc.name)
	}
}

// A permit taken away while CMD runs ends CMD as a lost lock does: exit 79.
func TestRunExpirablePermitLost(t *testing.T) {
	t.Parallel()
	c, rc := clitest.NewLockClient(t)
	name := clitest.LockName(t)
	e := semaphore.NewExpirable(c, name)
	clitest.CleanupKeys(t, rc, name, permitsKey(name))
	ok, err := e.TrySetPermits(t.Context(), 2)
	require.NoError(t, err)
	require.True(t, ok)

	// The permit not taken away outlives a loaded machine's late renewals.
	cmd, pid := startRun(t, "--kind", "expirable-semaphore", "--permits", "2", "--watchdog-timeout", "1s", name, "--",
		"sh", "-c", "echo $$; exec sleep 30")
	members, err := rc.Do(t.Context(), rc.B().Zrange().Key(permitsKey(name)).Min("0").Max("-1").Build()).AsStrSlice()
	require.NoError(t, err)
	require.Len(t, members, 2)
	require.NoError(t, rc.Do(t.Context(), rc.B().Zrem().Key(permitsKey(name)).Member(members[0]).Build()).Error())
	removed := time.Now()
	code, stderr := waitRun(t, cmd)
	assert.Equal(t, exit.Lost, code, stderr)
	assert.Less(t, time.Since(removed), time.Second+clitest.Slack)
	assert.Contains(t, stderr, "lost while CMD ran")
	assert.True(t, clitest.Dead(pid), "CMD is gone")
	// The permit still held was released; the one taken away is gone.
	assert.Equal(t, int64(1), clitest.Available(t, rc, name))
	assert.False(t, clitest.Exists(t, rc, permitsKey(name)))
}

// With --lease, CMD is terminated when the permit's lease ends first.
func TestRunExpirableLeaseEnds(t *testing.T) {
	t.Parallel()
	c, rc := clitest.NewLockClient(t)
	name := clitest.LockName(t)
	clitest.CleanupKeys(t, rc, name, permitsKey(name))
	ok, err := semaphore.NewExpirable(c, name).TrySetPermits(t.Context(), 1)
	require.NoError(t, err)
	require.True(t, ok)
	res := clitest.RunBinary(t, "", "run", "--redis", clitest.RedisURL(), "--kind", "expirable-semaphore", "--lease", "300ms", name, "--", "sleep", "30")
	assert.Equal(t, exit.Lost, res.Code, res.Stderr)
	assert.Less(t, res.Took, 300*time.Millisecond+clitest.Slack)
}

func TestLatchInitCountdownAwait(t *testing.T) {
	t.Parallel()
	_, rc := clitest.NewLockClient(t)
	name := clitest.LockName(t)
	clitest.CleanupKeys(t, rc, name)

	res := runInProcess(t, "latch", "--redis", clitest.RedisURL(), "init", name, "2")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Equal(t, name+": count set to 2\n", res.Stdout)
	res = runInProcess(t, "latch", "--redis", clitest.RedisURL(), "init", name, "1")
	assert.Equal(t, exit.Failure, res.Code)
	assert.Contains(t, res.Stderr, `"`+name+`" is already set (count 2); nothing changed`)

	res = clitest.RunBinary(t, "", "latch", "--redis", clitest.RedisURL(), "await", "--wait", "200ms", name)
	assert.Equal(t, exit.Busy, res.Code, res.Stderr)
	assert.Contains(t, res.Stderr, `interlock: latch "`+name+`" is still closed after --wait 200ms: its count is 2`)
	assert.GreaterOrEqual(t, res.Took, 200*time.Millisecond)
	assert.Less(t, res.Took, 200*time.Millisecond+clitest.Slack)
	res = clitest.RunBinary(t, "", "latch", "--redis", clitest.RedisURL(), "await", "--wait", "0", name)
	assert.Equal(t, exit.Busy, res.Code, res.Stderr)

	// A waiter with no --wait, released by countdowns of other processes.
	cmd := clitest.Command("latch", "--redis", clitest.RedisURL(), "await", name)
	var stderr clitest.SyncBuffer
	cmd.Stderr = &stderr
	clitest.Start(t, cmd)
	channel := keys.LatchChannel(name)
	require.Eventually(t, func() bool {
		n, err := rc.Do(t.Context(), rc.B().PubsubNumsub().Channel(channel).Build()).AsIntMap()
		return err == nil && n[channel] > 0
	}, 10*time.Second, 10*time.Millisecond, "await waits on the latch's channel")
	for range 2 {
		res = clitest.RunBinary(t, "", "latch", "--redis", clitest.RedisURL(), "countdown", name)
		require.Equal(t, 0, res.Code, res.Stderr)
		assert.Empty(t, res.Stdout)
	}
	opened := time.Now()
	assert.Equal(t, 0, clitest.Wait(t, cmd), stderr.String())
	assert.Less(t, time.Since(opened), clitest.Slack, "the countdown to 0 wakes the waiter")
	assert.False(t, clitest.Exists(t, rc, name), "an open latch has no key")

	res = clitest.RunBinary(t, "", "latch", "--redis", clitest.RedisURL(), "await", "--wait", "0", name)
	assert.Equal(t, 0, res.Code, "an open latch: at once")
	res = runInProcess(t, "latch", "--redis", clitest.RedisURL(), "countdown", name)
	assert.Equal(t, 0, res.Code, "counting down an open latch does nothing")
}

// A signal ends latch await with 128+signal.
func TestLatchAwaitInterrupted(t *testing.T) {
	t.Parallel()
	c, rc := clitest.NewLockClient(t)
	name := clitest.LockName(t)
	clitest.CleanupKeys(t, rc, name)
	ok, err := latch.New(c, name).TrySetCount(t.Context(), 1)
	require.NoError(t, err)
	require.True(t, ok)
	cmd := clitest.Command("latch", "--redis", clitest.RedisURL(), "await", name)
	var stderr clitest.SyncBuffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	channel := keys.LatchChannel(name)
	require.Eventually(t, func() bool {
		n, err := rc.Do(t.Context(), rc.B().PubsubNumsub().Channel(channel).Build()).AsIntMap()
		return err == nil && n[channel] > 0
	}, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	assert.Equal(t, 128+int(syscall.SIGINT), clitest.Wait(t, cmd), stderr.String())
	assert.Contains(t, stderr.String(), "while waiting for latch")
}

// Bad input is a usage error, found before anything is sent: the Redis
// given does not even exist.
func TestSyncUsageErrors(t *testing.T) {
	t.Parallel()
	const nowhere = "redis://127.0.0.1:1"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--kind", "semaphore", "--permits", "0", "S", "--", "true"}, "run: --permits 0: at least 1 permit is needed"},
		{[]string{"run", "--kind", "expirable-semaphore", "--permits", "-2", "S", "--", "true"}, "run: --permits -2: at least 1 permit is needed"},
		{[]string{"run", "--kind", "expirable-semaphore", "--permits", "1001", "S", "--", "true"}, "at most 1000 expirable permits"},
		{[]string{"run", "--kind", "semaphore", "--permits", "two", "S", "--", "true"}, "not an integer"},
		{[]string{"run", "--kind", "expirable-semaphore", "--lease", "500us", "S", "--", "true"}, "a lease must be at least 1ms"},
		{[]string{"run", "--kind", "semaphore", "--lease", "1s", "S", "--", "true"}, "--lease is not for --kind semaphore"},
		{[]string{"run", "--permits", "2", "L", "--", "true"}, "--permits is for --kind semaphore, expirable-semaphore and ratelimit, not for a reentrant lock"},
		{[]string{"run", "--kind", "semaphore", "a{b", "--", "true"}, "cluster slot"},
		{[]string{"semaphore"}, "semaphore: want a subcommand: init or add"},
		{[]string{"semaphore", "drain", "S"}, `unknown subcommand "drain"`},
		{[]string{"semaphore", "init", "S"}, "init: want NAME and N, got 1 arguments"},
		{[]string{"semaphore", "init", "S", "-3"}, "init: -3 permits: the count must not be negative"},
		{[]string{"semaphore", "init", "S", "x"}, `init: N "x" is not an integer`},
		{[]string{"semaphore", "add", "S", "0"}, "add: 0 permits: nothing to add"},
		{[]string{"semaphore", "add", "--ttl", "1s", "S", "1"}, "--ttl is for init only"},
		{[]string{"semaphore", "init", "--ttl", "500us", "S", "1"}, "--ttl 500µs: a TTL must be at least 1ms"},
		{[]string{"semaphore", "init", "--kind", "expirable-semaphore", "--ttl", "1s", "S", "1"}, "--ttl is for --kind semaphore only"},
		{[]string{"semaphore", "init", "--kind", "latch", "S", "1"}, `unknown --kind "latch"`},
		{[]string{"semaphore", "init", "}x", "1"}, "cluster slot"},
		{[]string{"latch"}, "latch: want a subcommand: init, countdown or await"},
		{[]string{"latch", "open", "L"}, `unknown subcommand "open"`},
		{[]string{"latch", "init", "L", "-1"}, "init: count -1 must not be negative"},
		{[]string{"latch", "init", "L", "1.5"}, `init: N "1.5" is not an integer`},
		{[]string{"latch", "await"}, "await: want NAME, got 0 arguments"},
		{[]string{"latch", "countdown", "--wait", "1s", "L"}, "--wait is for await only"},
		{[]string{"latch", "await", "--wait", "-1s", "L"}, "must not be negative"},
		{[]string{"latch", "countdown", "a{b"}, "cluster slot"},
		{[]string{"inspect", "--kind", "lock", "L"}, `unknown --kind "lock" (want semaphore, expirable-semaphore, latch)`},
	} {
		args := append([]string{tc.args[0], "--redis", nowhere}, tc.args[1:]...)
		res := runInProcess(t, args...)
		assert.Equal(t, exit.Usage, res.Code, "%v: %s", tc.args, res.Stderr)
		assert.Contains(t, res.Stderr, tc.want, tc.args)
		assert.True(t, strings.HasPrefix(res.Stderr, "interlock: "+tc.args[0]+": "), res.Stderr)
	}
	// And once through the binary, as scripts see it.
	res := clitest.RunBinary(t, "", "semaphore", "--redis", nowhere, "init", "S", "-1")
	assert.Equal(t, exit.Usage, res.Code, res.Stderr)
}

// A name whose key holds another type of data (a lock's hash) is refused
// with a usage error, and left as it was.
func TestSyncOnALock(t *testing.T) {
	t.Parallel()
	_, rc := clitest.NewLockClient(t)
	name := clitest.LockName(t)
	clitest.Do(t, rc, []string{"HSET " + name + " " + clitest.JavaA + ":1 1"}, name)
	for _, args := range [][]string{
		{"semaphore", "init", name, "2"},
		{"semaphore", "add", name, "2"},
		{"latch", "init", name, "2"},
		{"latch", "countdown", name},
		{"latch", "await", name},
	} {
		res := runInProcess(t, append([]string{args[0], "--redis", clitest.RedisURL()}, args[1:]...)...)
		assert.Equal(t, exit.Usage, res.Code, "%v: %s", args, res.Stderr)
		assert.Contains(t, res.Stderr, `"`+name+`" is no `+args[0]+`: it holds a lock (a hash of holders); nothing was changed`, args)
	}
	res := clitest.RunBinary(t, "", "run", "--redis", clitest.RedisURL(), "--kind", "semaphore", "--wait", "0", name, "--", "echo", "must not run")
	assert.Equal(t, exit.Usage, res.Code, res.Stderr)
	assert.Empty(t, res.Stdout)
	fields, err := rc.Do(t.Context(), rc.B().Hgetall().Key(name).Build()).AsStrMap()
	require.NoError(t, err)
	assert.Equal(t, map[string]string{clitest.JavaA + ":1": "1"}, fields, "the lock is untouched")
}

// "semaphore init NAME 0" sets up a semaphore with no free permit, as the
// library's TrySetPermits(0) does: a waiter then waits for a release.
func TestSemaphoreInitZero(t *testing.T) {
	t.Parallel()
	_, rc := clitest.NewLockClient(t)
	name := clitest.LockName(t)
	clitest.CleanupKeys(t, rc, name)
	res := clitest.RunBinary(t, "", "semaphore", "--redis", clitest.RedisURL(), "init", name, "0")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Equal(t, name+": set to 0 permits\n", res.Stdout)
	assert.Equal(t, int64(0), clitest.Available(t, rc, name))
	res = clitest.RunBinary(t, "", "run", "--redis", clitest.RedisURL(), "--kind", "semaphore", "--wait", "0", name, "--", "true")
	assert.Equal(t, exit.Busy, res.Code, res.Stderr)
}
