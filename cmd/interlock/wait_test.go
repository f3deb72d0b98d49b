//go:build unix

package main

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/clitest"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/cmd/interlock/internal/waitnote"
	"github.com/interlock-go/interlock/rlock"
)

// longWait is the --wait of the waits below: long enough for the note,
// short enough for the test.
const longWait = "6s"

// A wait that lasts says once, on stderr, what it waits for and which
// inspect command shows it: a lock held by another owner, a semaphore
// nobody set up, permits that are not free, a closed latch, a busy member
// of a multilock.
func TestWaitSaysWhatItWaitsFor(t *testing.T) {
	t.Parallel()
	c, rc := clitest.NewLockClient(t)
	redis := clitest.RedisURL()
	owner := interlock.WithOwner(t.Context(), 1)
	held := clitest.LockName(t) + ":held"
	require.NoError(t, rlock.New(c, held).Lock(owner))
	t.Cleanup(func() { _, _ = rlock.New(c, held).ForceUnlock(owner) })
	unset, short, closed := clitest.LockName(t)+":unset", clitest.LockName(t)+":short", clitest.LockName(t)+":closed"
	clitest.Do(t, rc, []string{"SET " + short + " 1", "SET " + closed + " 2"}, unset, short, closed)

	type wait struct {
		name, want string
		cmd        *exec.Cmd
		stderr     *clitest.SyncBuffer
	}
	var waits []wait
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"held lock", []string{"run", "--redis", redis, "--wait", longWait, held, "--", "true"},
			`still waiting for lock "` + held + `" after 3s: it is held by another owner (TTL `},
		{"held fair lock", []string{"run", "--redis", redis, "--kind", "fair", "--wait", longWait, held, "--", "true"},
			`still waiting for fair lock "` + held + `" after 3s: it is held by another owner (TTL `},
		{"multilock", []string{"run", "--redis", redis, "--wait", longWait, held + ":free", held, "--", "true"},
			`still waiting for multilock of "` + held + `:free", "` + held + `" after 3s: "` + held + `" is held by another owner`},
		{"semaphore not set up", []string{"run", "--redis", redis, "--kind", "semaphore", "--wait", longWait, unset, "--", "true"},
			`still waiting for semaphore "` + unset + `" after 3s: it is not set up, so no permit is free until ` +
				`'interlock semaphore init --redis ` + redis + ` ` + unset + ` N' or a release provides some; ` +
				`'interlock inspect --redis ` + redis + ` --kind semaphore ` + unset + `' shows more`},
		{"expirable semaphore not set up", []string{"run", "--redis", redis, "--kind", "expirable-semaphore", "--wait", longWait, unset, "--", "true"},
			`still waiting for expirable semaphore "` + unset + `" after 3s: it is not set up`},
		{"permits not free", []string{"run", "--redis", redis, "--kind", "semaphore", "--permits", "2", "--wait", longWait, short, "--", "true"},
			`still waiting for semaphore "` + short + `" after 3s: 1 free, 2 wanted; 'interlock inspect --redis ` + redis + ` --kind semaphore ` + short + `' shows more`},
		{"closed latch", []string{"latch", "--redis", redis, "await", "--wait", longWait, closed},
			`still waiting for latch "` + closed + `" after 3s: its count is 2, and each 'interlock latch countdown --redis ` + redis + ` ` + closed + `' takes 1 off; ` +
				`'interlock inspect --redis ` + redis + ` --kind latch ` + closed + `' shows more`},
	} {
		// All at once: each waits longWait.
		cmd := clitest.Command(tc.args...)
		stderr := &clitest.SyncBuffer{}
		cmd.Stderr = stderr
		clitest.Start(t, cmd)
		waits = append(waits, wait{tc.name, tc.want, cmd, stderr})
	}
	for _, w := range waits {
		assert.Equal(t, exit.Busy, clitest.Wait(t, w.cmd), "%s: %s", w.name, w.stderr)
		out := w.stderr.String()
		assert.Contains(t, out, "interlock: "+w.want, w.name)
		assert.Equal(t, 1, strings.Count(out, "still waiting"), "%s: said once: %s", w.name, out)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		assert.Len(t, lines, 2, "%s: the note, then the busy error: %s", w.name, out)
	}
}

// A wait that ends within waitnote.After says nothing.
func TestShortWaitSaysNothing(t *testing.T) {
	t.Parallel()
	c, _ := clitest.NewLockClient(t)
	lock := clitest.LockName(t)
	m := rlock.New(c, lock)
	owner := interlock.WithOwner(t.Context(), 1)
	require.NoError(t, m.Lock(owner))
	released := time.AfterFunc(500*time.Millisecond, func() { _ = m.Unlock(owner) })
	defer released.Stop()
	res := clitest.RunBinary(t, "", "run", "--redis", clitest.RedisURL(), "--wait", longWait, lock, "--", "true")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Empty(t, res.Stderr)
	assert.Less(t, res.Took, waitnote.After)
}

// A name of 120 KB is shortened in the tables of inspect and ls, with an
// ellipsis and its length, and kept whole in their JSON.
func TestLongNamesInTables(t *testing.T) {
	t.Parallel()
	_, rc := clitest.NewLockClient(t)
	base := clitest.LockName(t)
	name := base + ":" + strings.Repeat("n", 120*1024)
	clitest.Do(t, rc, []string{"HSET " + name + " " + clitest.JavaA + ":1 1", "PEXPIRE " + name + " 60000"}, name)
	shown := cli.Short(name)
	require.True(t, strings.HasSuffix(shown, "…(122918 bytes)"), shown)

	res := runInProcess(t, "inspect", "--redis", clitest.RedisURL(), name)
	require.Equal(t, 0, res.Code, res.Stderr)
	lines := clitest.FieldLines(res.Stdout)
	require.Len(t, lines, 2, res.Stdout)
	assert.True(t, strings.HasPrefix(lines[1], shown+" reentrant "), lines[1])
	assert.Less(t, len(res.Stdout), 400, "no column holds the whole name")
	reports := inspectJSON(t, name)
	require.Len(t, reports, 1)
	assert.Equal(t, name, reports[0].Name, "JSON has it whole")

	res = runInProcess(t, "ls", "--redis", clitest.RedisURL(), base+":*")
	require.Equal(t, 0, res.Code, res.Stderr)
	lines = clitest.FieldLines(res.Stdout)
	require.GreaterOrEqual(t, len(lines), 2, res.Stdout)
	assert.True(t, strings.HasPrefix(lines[1], shown+" reentrant* "), lines[1])
	assert.NotContains(t, res.Stdout, strings.Repeat("n", 100))
	res = runInProcess(t, "ls", "--redis", clitest.RedisURL(), "--json", base+":*")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Contains(t, res.Stdout, `"name":"`+name+`"`)
}
