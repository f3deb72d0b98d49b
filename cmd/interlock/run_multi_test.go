//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/cmd/interlock/internal/clitest"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/cmd/interlock/internal/inspect"
	"github.com/interlock-go/interlock/cmd/interlock/internal/kinds"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/rlock"
)

// multiNames returns n sorted lock names unique to the test.
func multiNames(t *testing.T, n int) []string {
	base := clitest.LockName(t)
	names := make([]string, n)
	for i := range names {
		names[i] = base + ":" + string(rune('a'+i))
	}
	return names
}

// run with several names holds every one of them, of the kind asked, while
// CMD runs (CMD prints INTERLOCK_LOCK and inspects them), and releases them
// all when CMD exits.
func TestRunMultiHoldsEveryLock(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind  string
		shows string // the kind inspect reports
		mode  string
	}{
		{kinds.Reentrant, kinds.Reentrant, ""},
		{kinds.Write, kinds.ReadWrite, "write"},
		{kinds.Spin, kinds.Reentrant, ""},
		{kinds.Fenced, kinds.Fenced, ""},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			t.Parallel()
			names := multiNames(t, 3)
			_, rc := clitest.NewLockClient(t)
			if tc.kind == kinds.Fenced {
				t.Cleanup(func() {
					for _, n := range names {
						rc.Do(t.Context(), rc.B().Del().Key(keys.Prefix(keys.FenceTokenPrefix, n)).Build())
					}
				})
			}
			args := append([]string{"run", "--redis", clitest.RedisURL(), "--kind", tc.kind}, names...)
			args = append(args, "--", "sh", "-c", `echo "$INTERLOCK_LOCK"; echo "${INTERLOCK_FENCE_TOKEN-}"; exec "$@"`, "sh",
				clitest.Binary(), "inspect", "--json", "--redis", clitest.RedisURL())
			res := clitest.RunBinary(t, "", append(args, names...)...)
			require.Equal(t, 0, res.Code, res.Stderr)
			assert.Empty(t, res.Stderr)
			lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
			require.Len(t, lines, 2+len(names), res.Stdout)
			assert.Equal(t, strings.Join(names, ","), lines[0], "INTERLOCK_LOCK has the names, comma-separated")

			if tc.kind == kinds.Fenced {
				tokens := strings.Split(lines[1], ",")
				require.Len(t, tokens, len(names), "one token per lock: %q", lines[1])
				for _, s := range tokens {
					token, err := strconv.ParseUint(s, 10, 64)
					require.NoError(t, err, lines[1])
					assert.Positive(t, token)
				}
			} else {
				assert.Empty(t, lines[1], "only --kind fenced exports tokens")
			}

			var owner int64
			for i, line := range lines[2:] {
				var r inspect.Report
				require.NoError(t, json.Unmarshal([]byte(line), &r), line)
				assert.Equal(t, names[i], r.Name)
				assert.Equal(t, tc.shows, r.Kind, r.Name)
				assert.Equal(t, tc.mode, r.Mode, r.Name)
				require.Len(t, r.Holders, 1, r.Name)
				h := r.Holders[0]
				assert.Positive(t, h.OwnerID, "the owner id is the pid of interlock run")
				if i > 0 {
					assert.Equal(t, owner, h.OwnerID, "one owner holds them all")
				}
				owner = h.OwnerID
				assert.Equal(t, int64(1), h.Holds)
				assert.InDelta(t, interlock.DefaultWatchdogTimeout.Milliseconds(), r.TTLms, float64(clitest.Slack.Milliseconds()),
					"a watchdog hold: %s", r.Name)
			}
			for _, n := range names {
				assert.False(t, clitest.Exists(t, rc, n), "run unlocks %s when CMD exits", n)
			}
		})
	}
}

// A member another owner holds makes run exit busy after --wait, with
// nothing held: the locks taken meanwhile are given back.
func TestRunMultiBusyMemberLeavesNothingHeld(t *testing.T) {
	t.Parallel()
	names := multiNames(t, 3)
	c, rc := clitest.NewLockClient(t)
	busy := rlock.New(c, names[1])
	ctx := interlock.WithOwner(t.Context(), 1)
	require.NoError(t, busy.Lock(ctx))
	defer func() { require.NoError(t, busy.Unlock(ctx)) }()

	for _, wait := range []time.Duration{300 * time.Millisecond, 0} {
		args := append([]string{"run", "--redis", clitest.RedisURL(), "--wait", wait.String()}, names...)
		res := clitest.RunBinary(t, "", append(args, "--", "echo", "must not run")...)
		assert.Equal(t, exit.Busy, res.Code, res.Stderr)
		assert.Empty(t, res.Stdout)
		assert.Contains(t, res.Stderr, `interlock: multilock of "`+names[0]+`", "`+names[1]+`", "`+names[2]+`" is busy`)
		assert.GreaterOrEqual(t, res.Took, wait)
		assert.Less(t, res.Took, wait+clitest.Slack)
		assert.False(t, clitest.Exists(t, rc, names[0]), "the lock taken before the busy one was given back")
		assert.False(t, clitest.Exists(t, rc, names[2]))
		n, err := busy.HoldCount(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, n, "the other owner's hold is untouched")
	}
}

// A member force-unlocked (or deleted, or whose lease ends) while CMD runs
// is a lost lock: CMD is terminated, run exits 79 and holds nothing after.
func TestRunMultiMemberLost(t *testing.T) {
	t.Parallel()
	t.Run("force-unlocked", func(t *testing.T) {
		t.Parallel()
		names := multiNames(t, 3)
		_, rc := clitest.NewLockClient(t)
		// The other locks outlive a loaded machine's late renewals: the
		// forced one is the one lost.
		args := append([]string{"--watchdog-timeout", "1s"}, names...)
		cmd, pid := startRun(t, append(args, "--", "sh", "-c", "echo $$; exec sleep 30")...)
		res := runInProcess(t, "unlock", "--redis", clitest.RedisURL(), "--force", names[1])
		require.Equal(t, 0, res.Code, res.Stderr)
		unlocked := time.Now()
		code, stderr := waitRun(t, cmd)
		assert.Equal(t, exit.Lost, code, stderr)
		assert.Less(t, time.Since(unlocked), time.Second+clitest.Slack)
		assert.Contains(t, stderr, "lost while CMD ran")
		assert.Contains(t, stderr, `(lock "`+names[1]+`": `, "the message names the lost lock")
		assert.True(t, clitest.Dead(pid), "CMD is gone")
		for _, n := range names {
			assert.False(t, clitest.Exists(t, rc, n), "%s is released", n)
		}
	})
	t.Run("gone at exit", func(t *testing.T) {
		t.Parallel()
		names := multiNames(t, 2)
		_, rc := clitest.NewLockClient(t)
		done := filepath.Join(t.TempDir(), "done")
		// CMD holds the locks until the file exists; the watchdog renews
		// only every 10s, so the loss is found at unlock.
		args := append(names, "--", "sh", "-c", `echo $$; while [ ! -e "$1" ]; do sleep 0.02; done`, "sh", done)
		cmd, _ := startRun(t, args...)
		require.NoError(t, rc.Do(t.Context(), rc.B().Del().Key(names[0]).Build()).Error())
		require.NoError(t, os.WriteFile(done, nil, 0o600))
		code, stderr := waitRun(t, cmd)
		assert.Equal(t, exit.Lost, code, stderr)
		assert.Contains(t, stderr, `: lock "`+names[0]+`" was gone when CMD exited`)
		assert.False(t, clitest.Exists(t, rc, names[1]), "the other lock is released")
	})
	t.Run("lease", func(t *testing.T) {
		t.Parallel()
		names := multiNames(t, 2)
		_, rc := clitest.NewLockClient(t)
		args := append([]string{"run", "--redis", clitest.RedisURL(), "--lease", "300ms"}, names...)
		res := clitest.RunBinary(t, "", append(args, "--", "sleep", "30")...)
		assert.Equal(t, exit.Lost, res.Code, res.Stderr)
		assert.Less(t, res.Took, 300*time.Millisecond+clitest.Slack)
		for _, n := range names {
			assert.False(t, clitest.Exists(t, rc, n), "%s is gone", n)
		}
	})
}

// Bad sets of names are refused before anything is sent: with Redis
// unreachable the error is still the usage error.
func TestRunMultiUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"duplicate", []string{"L1", "L2", "L1", "--", "true"}, `lock "L1" is given twice`},
		{"duplicate read", []string{"--kind", "read", "L", "L", "--", "true"}, `lock "L" is given twice`},
		{"semaphore", []string{"--kind", "semaphore", "S1", "S2", "--", "true"}, "--kind semaphore takes one NAME, got 2"},
		{"expirable", []string{"--kind", "expirable-semaphore", "S1", "S2", "--", "true"}, "--kind expirable-semaphore takes one NAME"},
		{"bad second name", []string{"L1", "a{b", "--", "true"}, "cluster slot"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runInProcess(t, append([]string{"run", "--redis", "redis://127.0.0.1:1"}, tc.args...)...)
			assert.Equal(t, exit.Usage, res.Code)
			assert.Contains(t, res.Stderr, tc.want)
			assert.True(t, strings.HasPrefix(res.Stderr, "interlock: run: "), res.Stderr)
		})
	}
	// And through the binary, against the real server: nothing is created.
	names := multiNames(t, 2)
	_, rc := clitest.NewLockClient(t)
	res := clitest.RunBinary(t, "", "run", "--redis", clitest.RedisURL(), names[0], names[1], names[0], "--", "echo", "must not run")
	assert.Equal(t, exit.Usage, res.Code)
	assert.Empty(t, res.Stdout)
	assert.Contains(t, res.Stderr, "is given twice")
	for _, n := range names {
		assert.False(t, clitest.Exists(t, rc, n))
	}
}

// A signal while run gathers the locks ends it with 128+signal, and gives
// back the locks it took.
func TestRunMultiInterruptedWhileWaiting(t *testing.T) {
	t.Parallel()
	names := multiNames(t, 2)
	c, rc := clitest.NewLockClient(t)
	busy := rlock.New(c, names[1])
	ctx := interlock.WithOwner(t.Context(), 1)
	require.NoError(t, busy.Lock(ctx))
	defer func() { require.NoError(t, busy.Unlock(ctx)) }()

	cmd := clitest.Command(append(append([]string{"run", "--redis", clitest.RedisURL()}, names...), "--", "true")...)
	var stderr clitest.SyncBuffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	// Once run subscribed to the busy lock's channel, it holds the first
	// lock and waits for the second.
	channel := "redisson_lock__channel:{" + names[1] + "}"
	require.Eventually(t, func() bool {
		n, err := rc.Do(ctx, rc.B().PubsubNumsub().Channel(channel).Build()).AsIntMap()
		return err == nil && n[channel] > 0
	}, 10*time.Second, 10*time.Millisecond)
	assert.True(t, clitest.Exists(t, rc, names[0]), "the first lock is held meanwhile")
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	err := cmd.Wait()
	var exitErr interface{ ExitCode() int }
	require.ErrorAs(t, err, &exitErr)
	assert.Equal(t, 128+int(syscall.SIGINT), exitErr.ExitCode(), stderr.String())
	assert.Contains(t, stderr.String(), "while waiting for multilock of")
	assert.False(t, clitest.Exists(t, rc, names[0]), "the lock taken was given back")
}
