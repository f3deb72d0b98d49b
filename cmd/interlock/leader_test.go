//go:build unix

package main

import (
	"bufio"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/cmd/interlock/internal/clitest"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/election"
	"github.com/interlock-go/interlock/fenced"
)

// leader runs CMD as the leader, with the term's token and value in its
// environment and the value readable by other candidates; it resigns when
// CMD exits, and passes CMD's status through.
func TestLeaderRunsCMDWhileLeading(t *testing.T) {
	t.Parallel()
	name := clitest.LockName(t)
	c, rc := clitest.NewLockClient(t)
	t.Cleanup(func() { clitest.CleanupKeys(t, rc, "redisson_lock_token:{"+name+"}") })
	e := election.New(c, name)

	// CMD prints its environment, then waits for stdin to close.
	cmd := clitest.Command("leader", "--redis", clitest.RedisURL(), "--value", "host-a", name, "--",
		"sh", "-c", `echo "$INTERLOCK_LOCK $INTERLOCK_FENCING_TOKEN $INTERLOCK_FENCE_TOKEN $INTERLOCK_LEADER_VALUE"; read x; exit 3`)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr clitest.SyncBuffer
	cmd.Stderr = &stderr
	clitest.Start(t, cmd)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, stderr.String())
	assert.Equal(t, name+" 1 1 host-a\n", line)

	ld, err := e.Leader(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "host-a", ld.Value)
	assert.Equal(t, uint64(1), ld.Token)

	require.NoError(t, stdin.Close())
	assert.Equal(t, 3, clitest.Wait(t, cmd), stderr.String())
	_, err = e.Leader(t.Context())
	assert.ErrorIs(t, err, election.ErrNoLeader, "leader resigned when CMD exited")
}

// A second leader waits for the first, and runs with the next token.
func TestLeaderWaitsForTheLeader(t *testing.T) {
	t.Parallel()
	name := clitest.LockName(t)
	c, rc := clitest.NewLockClient(t)
	t.Cleanup(func() { clitest.CleanupKeys(t, rc, "redisson_lock_token:{"+name+"}") })
	m := fenced.New(c, name)
	ctx := interlock.WithOwner(t.Context(), 1)
	token, err := m.LockToken(ctx) // a holder that is no Go election: a Java one, say
	require.NoError(t, err)
	go func() {
		time.Sleep(300 * time.Millisecond)
		assert.NoError(t, m.Unlock(ctx))
	}()
	res := clitest.RunBinary(t, "", "leader", "--redis", clitest.RedisURL(), name, "--", "sh", "-c", `echo $INTERLOCK_FENCING_TOKEN`)
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Equal(t, strconv.FormatUint(token+1, 10)+"\n", res.Stdout)
	assert.GreaterOrEqual(t, res.Took, 300*time.Millisecond)
}

// When leadership is lost, CMD gets SIGTERM and leader exits 79.
func TestLeaderLost(t *testing.T) {
	t.Parallel()
	name := clitest.LockName(t)
	_, rc := clitest.NewLockClient(t)
	t.Cleanup(func() { clitest.CleanupKeys(t, rc, "redisson_lock_token:{"+name+"}") })
	cmd := clitest.Command("leader", "--redis", clitest.RedisURL(), "--watchdog-timeout", "1s", name, "--", "sh", "-c", "echo $$; exec sleep 30")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr clitest.SyncBuffer
	cmd.Stderr = &stderr
	clitest.Start(t, cmd)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, stderr.String())
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err)

	require.NoError(t, rc.Do(t.Context(), rc.B().Del().Key(name).Build()).Error())
	deleted := time.Now()
	code := clitest.Wait(t, cmd)
	assert.Equal(t, exit.Lost, code, stderr.String())
	assert.Less(t, time.Since(deleted), time.Second+clitest.Slack)
	assert.Contains(t, stderr.String(), "leadership of election \""+name+"\" lost while CMD ran")
	assert.True(t, clitest.Dead(pid), "CMD is gone")
}

func TestLeaderUsageErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"leader"},
		{"leader", "x"},
		{"leader", "x", "--"},
		{"leader", "--", "true"},
		{"leader", "x", "y", "--", "true"},
		{"leader", "--watchdog-timeout", "1ms", "x", "--", "true"},
		{"leader", "a{b", "--", "true"},
	} {
		res := runInProcess(t, args...)
		assert.Equal(t, exit.Usage, res.Code, "%q: %s", args, res.Stderr)
	}
}

// A campaign that lasts says once, on stderr, who leads meanwhile.
func TestLeaderWaitNote(t *testing.T) {
	t.Parallel()
	name := clitest.LockName(t)
	c, rc := clitest.NewLockClient(t)
	t.Cleanup(func() { clitest.CleanupKeys(t, rc, "redisson_lock_token:{"+name+"}", "interlock_leader:{"+name+"}") })
	e := election.New(c, name)
	_, err := e.Campaign(t.Context(), "host-a")
	require.NoError(t, err)
	go func() {
		time.Sleep(3500 * time.Millisecond)
		assert.NoError(t, e.Resign(t.Context()))
	}()
	res := clitest.RunBinary(t, "", "leader", "--redis", clitest.RedisURL(), name, "--", "true")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Contains(t, res.Stderr, `still waiting to lead election "`+name+`" after 3s: term 1 is led by "host-a"; 'interlock inspect`)
	assert.Equal(t, 1, strings.Count(res.Stderr, "\n"), "one line: %s", res.Stderr)
}
