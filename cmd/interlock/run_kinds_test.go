//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/cmd/interlock/internal/clitest"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/cmd/interlock/internal/inspect"
	"github.com/interlock-go/interlock/cmd/interlock/internal/kinds"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/internal/keys"
)

// run takes the lock of each kind with the matching package while CMD
// runs (CMD inspects it), and releases it when CMD exits.
func TestRunEveryKind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind  string
		shows string // the kind inspect reports
		mode  string
	}{
		{kinds.Reentrant, kinds.Reentrant, ""},
		{kinds.Fair, kinds.Reentrant, ""}, // a fair lock nobody waits for looks reentrant
		{kinds.Read, kinds.ReadWrite, "read"},
		{kinds.Write, kinds.ReadWrite, "write"},
		{kinds.Fenced, kinds.Fenced, ""},
		{kinds.Spin, kinds.Reentrant, ""}, // a spin hold is an RLock hold on the wire
	} {
		t.Run(tc.kind, func(t *testing.T) {
			t.Parallel()
			lock := clitest.LockName(t)
			res := clitest.RunBinary(t, "", "run", "--redis", clitest.RedisURL(), "--kind", tc.kind, lock, "--",
				clitest.Binary(), "inspect", "--json", "--redis", clitest.RedisURL(), lock)
			require.Equal(t, 0, res.Code, res.Stderr)
			var r inspect.Report
			require.NoError(t, json.Unmarshal([]byte(res.Stdout), &r), res.Stdout)
			assert.Equal(t, tc.shows, r.Kind)
			assert.Equal(t, tc.mode, r.Mode)
			require.Len(t, r.Holders, 1)
			h := r.Holders[0]
			assert.Positive(t, h.OwnerID, "the owner id is the pid of interlock run")
			assert.Equal(t, int64(1), h.Holds)
			assert.Equal(t, tc.kind == kinds.Write, h.Write)
			if tc.kind == kinds.Read {
				require.Len(t, h.ReadHoldTTLms, 1)
				assert.Positive(t, h.ReadHoldTTLms[0])
			}
			assert.InDelta(t, interlock.DefaultWatchdogTimeout.Milliseconds(), r.TTLms, float64(clitest.Slack.Milliseconds()))
			assert.Empty(t, r.Notes)

			_, rc := clitest.NewLockClient(t)
			assert.False(t, clitest.Exists(t, rc, lock), "run unlocks when CMD exits")
			if tc.kind == kinds.Fenced {
				rc.Do(t.Context(), rc.B().Del().Key(keys.Prefix(keys.FenceTokenPrefix, lock)).Build())
			}
		})
	}
}

// --kind fenced gives CMD the acquisition's token, larger on every run.
func TestRunFencedExportsToken(t *testing.T) {
	t.Parallel()
	lock := clitest.LockName(t)
	_, rc := clitest.NewLockClient(t)
	t.Cleanup(func() { rc.Do(t.Context(), rc.B().Del().Key(keys.Prefix(keys.FenceTokenPrefix, lock)).Build()) })
	var tokens []uint64
	for range 2 {
		res := clitest.RunBinary(t, "", "run", "--redis", clitest.RedisURL(), "--kind", "fenced", "--lease", "10s", lock, "--",
			"sh", "-c", `echo "$INTERLOCK_FENCE_TOKEN"`)
		require.Equal(t, 0, res.Code, res.Stderr)
		token, err := strconv.ParseUint(strings.TrimSpace(res.Stdout), 10, 64)
		require.NoError(t, err, "INTERLOCK_FENCE_TOKEN=%q", res.Stdout)
		tokens = append(tokens, token)
	}
	assert.Positive(t, tokens[0])
	assert.Greater(t, tokens[1], tokens[0])

	res := clitest.RunBinary(t, "", "run", "--redis", clitest.RedisURL(), lock, "--", "sh", "-c", `echo "${INTERLOCK_FENCE_TOKEN-unset}"`)
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Equal(t, "unset\n", res.Stdout, "only --kind fenced exports a token")
}

// Readers share the lock: two "run --kind read" hold it at once, while a
// writer finds it busy. Once they are done, the writer gets in.
func TestRunReadersShareWritersWait(t *testing.T) {
	t.Parallel()
	lock := clitest.LockName(t)
	done := filepath.Join(t.TempDir(), "done")
	// CMD prints its pid, then holds the lock until the file exists.
	hold := []string{"sh", "-c", `echo $$; while [ ! -e "$1" ]; do sleep 0.02; done`, "sh", done}
	first, _ := startRun(t, append([]string{"--kind", "read", lock, "--"}, hold...)...)
	second, _ := startRun(t, append([]string{"--kind", "read", "--wait", "5s", lock, "--"}, hold...)...)
	// Both CMDs are running now, each under its own read hold.
	r := inspectJSON(t, lock)[0]
	assert.Equal(t, "read", r.Mode)
	assert.Len(t, r.Holders, 2)

	res := clitest.RunBinary(t, "", "run", "--redis", clitest.RedisURL(), "--kind", "write", "--wait", "200ms", lock, "--", "echo", "must not run")
	assert.Equal(t, exit.Busy, res.Code, res.Stderr)
	assert.Empty(t, res.Stdout)
	assert.Contains(t, res.Stderr, "interlock: write lock \""+lock+"\" is busy")
	assert.GreaterOrEqual(t, res.Took, 200*time.Millisecond)
	assert.Less(t, res.Took, 200*time.Millisecond+clitest.Slack)

	require.NoError(t, os.WriteFile(done, nil, 0o600))
	for _, r := range []*runningCmd{first, second} {
		code, stderr := waitRun(t, r)
		assert.Equal(t, 0, code, stderr)
	}
	res = clitest.RunBinary(t, "", "run", "--redis", clitest.RedisURL(), "--kind", "write", "--wait", "5s", lock, "--", "echo", "wrote")
	assert.Equal(t, 0, res.Code, res.Stderr)
	assert.Equal(t, "wrote\n", res.Stdout)
}

// "run --kind fair" waiters queue, and are served in the order they
// queued.
func TestRunFairServesWaitersInOrder(t *testing.T) {
	t.Parallel()
	lock := clitest.LockName(t)
	c, rc := clitest.NewLockClient(t)
	m := fairlock.New(c, lock)
	ctx := interlock.WithOwner(t.Context(), 1)
	require.NoError(t, m.Lock(ctx))
	queue := keys.Prefix(keys.FairQueuePrefix, lock)
	served := filepath.Join(t.TempDir(), "served")

	var waiters []*runningCmd
	for i, name := range []string{"first", "second"} {
		cmd := clitest.Command("run", "--redis", clitest.RedisURL(), "--kind", "fair", lock, "--",
			"sh", "-c", `echo "$1" >>"$2"`, "sh", name, served)
		r := &runningCmd{Cmd: cmd}
		cmd.Stderr = &r.stderr
		clitest.Start(t, cmd)
		waiters = append(waiters, r)
		require.Eventually(t, func() bool {
			n, err := rc.Do(ctx, rc.B().Llen().Key(queue).Build()).AsInt64()
			return err == nil && n == int64(i+1)
		}, 10*time.Second, 5*time.Millisecond, "%s waiter queues", name)
	}
	r := inspectJSON(t, lock)[0]
	assert.Equal(t, kinds.Fair, r.Kind)
	require.Len(t, r.Queue, 2)
	for i, w := range r.Queue {
		assert.Equal(t, int64(waiters[i].Process.Pid), w.OwnerID, "the owner id is the pid of interlock run")
		assert.False(t, w.Stale)
	}
	assert.Equal(t, fairlock.DefaultWaitTimeout.Milliseconds(), r.Queue[1].DeadlineMs-r.Queue[0].DeadlineMs)

	require.NoError(t, m.Unlock(ctx))
	for _, w := range waiters {
		code, stderr := waitRun(t, w)
		assert.Equal(t, 0, code, stderr)
	}
	got, err := os.ReadFile(served)
	require.NoError(t, err)
	assert.Equal(t, "first\nsecond\n", string(got))
	assert.False(t, clitest.Exists(t, rc, queue))
}

// A fair waiter that gives up after --wait leaves the queue.
func TestRunFairBusyLeavesQueue(t *testing.T) {
	t.Parallel()
	lock := clitest.LockName(t)
	c, rc := clitest.NewLockClient(t)
	m := fairlock.New(c, lock)
	ctx := interlock.WithOwner(t.Context(), 1)
	require.NoError(t, m.Lock(ctx))
	defer func() { require.NoError(t, m.Unlock(ctx)) }()

	res := clitest.RunBinary(t, "", "run", "--redis", clitest.RedisURL(), "--kind", "fair", "--wait", "200ms", lock, "--", "true")
	assert.Equal(t, exit.Busy, res.Code, res.Stderr)
	assert.False(t, clitest.Exists(t, rc, keys.Prefix(keys.FairQueuePrefix, lock)), "the waiter left the queue")
	assert.False(t, clitest.Exists(t, rc, keys.Prefix(keys.FairTimeoutPrefix, lock)))
}

// Losing a read lock terminates CMD, as for the other kinds.
func TestRunReadLockLost(t *testing.T) {
	t.Parallel()
	lock := clitest.LockName(t)
	_, rc := clitest.NewLockClient(t)
	cmd, pid := startRun(t, "--kind", "read", "--watchdog-timeout", "1s", lock, "--", "sh", "-c", "echo $$; exec sleep 30")
	require.NoError(t, rc.Do(t.Context(), rc.B().Del().Key(lock).Build()).Error())
	code, stderr := waitRun(t, cmd)
	assert.Equal(t, exit.Lost, code, stderr)
	assert.Contains(t, stderr, "lost while CMD ran")
	assert.True(t, clitest.Dead(pid), "CMD is gone")
}

// --kind ratelimit takes the permits before CMD runs (CMD sees them taken)
// and gives nothing back when it exits.
func TestRunRateLimit(t *testing.T) {
	t.Parallel()
	name := clitest.LockName(t)
	c, rc := clitest.NewLockClient(t)
	clitest.CleanupKeys(t, rc, keys.RateLimiter(name, c.ID())...)
	res := clitest.RunBinary(t, "", "ratelimit", "set", "--redis", clitest.RedisURL(), name, "5", "1m")
	require.Equal(t, 0, res.Code, res.Stderr)
	res = clitest.RunBinary(t, "", "run", "--redis", clitest.RedisURL(), "--kind", "ratelimit", "--permits", "3", name, "--",
		clitest.Binary(), "inspect", "--json", "--redis", clitest.RedisURL(), name)
	require.Equal(t, 0, res.Code, res.Stderr)
	var r inspect.Report
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &r), res.Stdout)
	assert.Equal(t, kinds.RateLimit, r.Kind)
	require.NotNil(t, r.RateLimit)
	require.NotNil(t, r.RateLimit.Overall)
	assert.EqualValues(t, 2, r.RateLimit.Overall.Free)
	assert.EqualValues(t, 3, r.RateLimit.Overall.Taken)
	after := inspectJSON(t, name)[0].RateLimit.Overall
	assert.EqualValues(t, 3, after.Taken, "nothing is given back")
}
