//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
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
	"github.com/interlock-go/interlock/rlock"
)

func TestRunPassesExitStatusThrough(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		script string
		want   int
	}{
		{"zero", "exit 0", 0},
		{"three", "exit 3", 3},
		{"SIGKILL", "kill -KILL $$", 128 + int(syscall.SIGKILL)},
		{"SIGTERM", "kill -TERM $$", 128 + int(syscall.SIGTERM)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := clitest.RunBinary(t, "", "run", "--redis", clitest.RedisURL(), clitest.LockName(t), "--", "sh", "-c", tc.script)
			assert.Equal(t, tc.want, res.Code, "stderr: %s", res.Stderr)
			assert.Empty(t, res.Stderr, "a status passed through prints nothing")
		})
	}
}

func TestRunPassesStdioAndEnvironment(t *testing.T) {
	t.Parallel()
	lock := clitest.LockName(t)
	res := clitest.RunBinary(t, "from stdin\n", "run", "--redis", clitest.RedisURL(), lock, "--",
		"sh", "-c", `echo "lock=$INTERLOCK_LOCK"; cat; echo oops >&2`)
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Equal(t, "lock="+lock+"\nfrom stdin\n", res.Stdout)
	assert.Equal(t, "oops\n", res.Stderr)
}

// run holds the lock while CMD runs, with the watchdog and the pid as
// owner id, and releases it afterwards. CMD itself inspects the lock.
func TestRunHoldsTheLockWhileCMDRuns(t *testing.T) {
	t.Parallel()
	lock := clitest.LockName(t)
	res := clitest.RunBinary(t, "", "run", "--redis", clitest.RedisURL(), lock, "--", clitest.Binary(), "inspect", "--json", "--redis", clitest.RedisURL(), lock)
	require.Equal(t, 0, res.Code, res.Stderr)
	var r inspect.Report
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &r), res.Stdout)
	assert.Equal(t, kinds.Reentrant, r.Kind)
	assert.True(t, r.Locked)
	require.Len(t, r.Holders, 1)
	assert.Positive(t, r.Holders[0].OwnerID, "the owner id is the pid of interlock run")
	assert.Equal(t, int64(1), r.Holders[0].Holds)
	assert.InDelta(t, interlock.DefaultWatchdogTimeout.Milliseconds(), r.TTLms, float64(clitest.Slack.Milliseconds()))

	_, rc := clitest.NewLockClient(t)
	assert.False(t, clitest.Exists(t, rc, lock), "run unlocks when CMD exits")
}

func TestRunBusy(t *testing.T) {
	t.Parallel()
	lock := clitest.LockName(t)
	c, _ := clitest.NewLockClient(t)
	m := rlock.New(c, lock)
	ctx := interlock.WithOwner(t.Context(), 1)
	require.NoError(t, m.Lock(ctx))
	defer func() { require.NoError(t, m.Unlock(ctx)) }()

	res := clitest.RunBinary(t, "", "run", "--redis", clitest.RedisURL(), "--wait", "200ms", lock, "--", "sh", "-c", "echo must not run")
	assert.Equal(t, exit.Busy, res.Code)
	assert.Empty(t, res.Stdout)
	assert.Contains(t, res.Stderr, "interlock: lock \""+lock+"\" is busy")
	assert.GreaterOrEqual(t, res.Took, 200*time.Millisecond)
	assert.Less(t, res.Took, 200*time.Millisecond+clitest.Slack)

	res = clitest.RunBinary(t, "", "run", "--redis", clitest.RedisURL(), "--wait", "0", lock, "--", "true")
	assert.Equal(t, exit.Busy, res.Code, "--wait 0 makes one attempt")
}

// When the lock is lost, CMD gets SIGTERM and run exits with the lost
// code within a renewal or two.
func TestRunLockLost(t *testing.T) {
	t.Parallel()
	lock := clitest.LockName(t)
	_, rc := clitest.NewLockClient(t)
	cmd, pid := startRun(t, "--watchdog-timeout", "1s", lock, "--", "sh", "-c", "echo $$; exec sleep 30")

	require.NoError(t, rc.Do(t.Context(), rc.B().Del().Key(lock).Build()).Error())
	deleted := time.Now()
	code, stderr := waitRun(t, cmd)
	assert.Equal(t, exit.Lost, code, stderr)
	assert.Less(t, time.Since(deleted), time.Second+clitest.Slack)
	assert.Contains(t, stderr, "lost while CMD ran")
	assert.True(t, clitest.Dead(pid), "CMD is gone")
}

// A CMD that ignores SIGTERM is killed, with its whole process group,
// after --grace.
func TestRunLockLostGrace(t *testing.T) {
	t.Parallel()
	lock := clitest.LockName(t)
	_, rc := clitest.NewLockClient(t)
	cmd, pid := startRun(t, "--watchdog-timeout", "1s", "--grace", "300ms", lock, "--",
		"sh", "-c", `trap "" TERM; sleep 30 & echo $!; wait`)

	require.NoError(t, rc.Do(t.Context(), rc.B().Del().Key(lock).Build()).Error())
	deleted := time.Now()
	code, stderr := waitRun(t, cmd)
	assert.Equal(t, exit.Lost, code, stderr)
	took := time.Since(deleted)
	assert.GreaterOrEqual(t, took, 300*time.Millisecond, "SIGKILL waits for --grace")
	assert.Less(t, took, 1300*time.Millisecond+clitest.Slack)
	assert.Contains(t, stderr, "sending SIGKILL")
	// The sleep in the background was in CMD's group: killed too. It was
	// sh's child; init reaps it in its own time.
	assert.Eventually(t, func() bool { return clitest.Dead(pid) }, clitest.Slack, 10*time.Millisecond, "CMD's child is gone")
}

// With --lease, CMD is terminated when the lease ends before CMD does.
func TestRunLeaseEnds(t *testing.T) {
	t.Parallel()
	res := clitest.RunBinary(t, "", "run", "--redis", clitest.RedisURL(), "--lease", "300ms", clitest.LockName(t), "--", "sleep", "30")
	assert.Equal(t, exit.Lost, res.Code, res.Stderr)
	assert.Less(t, res.Took, 300*time.Millisecond+clitest.Slack)
}

// SIGTERM sent to interlock is passed on to CMD, whose status is then
// interlock's.
func TestRunForwardsSignals(t *testing.T) {
	t.Parallel()
	// A loop of short sleeps: the shell runs its trap between two of them,
	// whenever the signal arrives.
	cmd, _ := startRun(t, clitest.LockName(t), "--", "sh", "-c", `trap "exit 42" TERM; echo $$; while :; do sleep 0.1; done`)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	code, stderr := waitRun(t, cmd)
	assert.Equal(t, 42, code, stderr)
}

// A signal while run waits for the lock ends it with 128+signal.
func TestRunInterruptedWhileWaiting(t *testing.T) {
	t.Parallel()
	lock := clitest.LockName(t)
	c, rc := clitest.NewLockClient(t)
	m := rlock.New(c, lock)
	ctx := interlock.WithOwner(t.Context(), 1)
	require.NoError(t, m.Lock(ctx))
	defer func() { require.NoError(t, m.Unlock(ctx)) }()

	cmd := clitest.Command("run", "--redis", clitest.RedisURL(), lock, "--", "true")
	var stderr clitest.SyncBuffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	// Once run subscribed to the lock's channel it is waiting, with its
	// signal handler installed.
	channel := "redisson_lock__channel:{" + lock + "}"
	require.Eventually(t, func() bool {
		n, err := rc.Do(ctx, rc.B().PubsubNumsub().Channel(channel).Build()).AsIntMap()
		return err == nil && n[channel] > 0
	}, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	err := cmd.Wait()
	var exitErr interface{ ExitCode() int }
	require.ErrorAs(t, err, &exitErr)
	assert.Equal(t, 128+int(syscall.SIGINT), exitErr.ExitCode(), stderr.String())
	assert.Contains(t, stderr.String(), "while waiting for lock")
}

func TestRunCannotStartCMD(t *testing.T) {
	t.Parallel()
	res := clitest.RunBinary(t, "", "run", "--redis", clitest.RedisURL(), clitest.LockName(t), "--", "no-such-command-interlock")
	assert.Equal(t, exit.NotFound, res.Code)
	assert.Contains(t, res.Stderr, "interlock: cannot run no-such-command-interlock")

	script := filepath.Join(t.TempDir(), "not-executable")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\n"), 0o600))
	res = clitest.RunBinary(t, "", "run", "--redis", clitest.RedisURL(), clitest.LockName(t), "--", script)
	assert.Equal(t, exit.CannotExec, res.Code)
}

func TestRunRedisUnreachable(t *testing.T) {
	t.Parallel()
	res := clitest.RunBinary(t, "", "run", "--redis", "redis://user:secret@127.0.0.1:1", clitest.LockName(t), "--", "true")
	assert.Equal(t, exit.Unavailable, res.Code)
	assert.Contains(t, res.Stderr, "interlock: cannot connect to Redis at 127.0.0.1:1")
	assert.NotContains(t, res.Stderr, "secret")
}

func TestRunUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"kind unknown", []string{"--kind", "redlock", "L", "--", "true"}, `unknown --kind "redlock" (want reentrant, fair, read, write, fenced, spin, semaphore, expirable-semaphore, ratelimit)`},
		{"kind empty", []string{"--kind=", "L", "--", "true"}, `unknown --kind ""`},
		{"no separator", []string{"L", "true"}, `missing "--"`},
		{"no CMD", []string{"L", "--"}, `no CMD after "--"`},
		{"no LOCK", []string{"--", "true"}, `no LOCK before "--"`},
		{"bad name", []string{"a{b", "--", "true"}, "cluster slot"},
		{"negative wait", []string{"--wait", "-1s", "L", "--", "true"}, "must not be negative"},
		{"bad duration", []string{"--lease", "soon", "L", "--", "true"}, "not a duration"},
		{"tiny watchdog", []string{"--watchdog-timeout", "1ms", "L", "--", "true"}, "the minimum is"},
		{"unknown flag", []string{"--nope", "L", "--", "true"}, "flag provided but not defined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runInProcess(t, append([]string{"run", "--redis", clitest.RedisURL()}, tc.args...)...)
			assert.Equal(t, exit.Usage, res.Code)
			assert.Contains(t, res.Stderr, tc.want)
			assert.True(t, strings.HasPrefix(res.Stderr, "interlock: run: "), res.Stderr)
		})
	}
	// And once through the binary, as scripts see it.
	res := clitest.RunBinary(t, "", "run", "--kind", "Fair", "--redis", clitest.RedisURL(), clitest.LockName(t), "--", "true")
	assert.Equal(t, exit.Usage, res.Code)
	assert.Contains(t, res.Stderr, `unknown --kind "Fair"`)
}

// Flags may come after LOCK, before "--".
func TestRunFlagsAfterLock(t *testing.T) {
	t.Parallel()
	res := clitest.RunBinary(t, "", "run", clitest.LockName(t), "--redis", clitest.RedisURL(), "--wait", "1s", "--", "sh", "-c", "exit 5")
	assert.Equal(t, 5, res.Code, res.Stderr)
}

// startRun starts "interlock run" with args and returns once CMD printed
// its first line, a pid, which it returns too.
func startRun(t *testing.T, args ...string) (*runningCmd, int) {
	t.Helper()
	return startRunOn(t, clitest.RedisURL(), args...)
}

// startRunOn is startRun against the server at url.
func startRunOn(t *testing.T, url string, args ...string) (*runningCmd, int) {
	t.Helper()
	cmd := clitest.Command(append([]string{"run", "--redis", url}, args...)...)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	r := &runningCmd{Cmd: cmd}
	cmd.Stderr = &r.stderr
	clitest.Start(t, cmd)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "stderr: %s", r.stderr.String())
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err)
	return r, pid
}

// runningCmd is an interlock run started by startRun.
type runningCmd struct {
	*exec.Cmd
	stderr clitest.SyncBuffer
}

// waitRun waits, a minute at most, for run to exit and returns its exit
// code and stderr.
func waitRun(t *testing.T, r *runningCmd) (int, string) {
	t.Helper()
	return clitest.Wait(t, r.Cmd), r.stderr.String()
}
