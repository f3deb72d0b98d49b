//go:build unix

package main

// Names whose keys hold data the command's kind cannot work on.

import (
	"slices"
	"strings"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/cmd/interlock/internal/clitest"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
)

// foreign is data an application may keep under a name a command is
// given: set up by the commands, with NAME standing for the name.
type foreign struct {
	what  string
	setup []string
}

var (
	fString  = foreign{"string", []string{"SET NAME hello"}}
	fAppHash = foreign{"application hash", []string{"HSET NAME a 1"}}
	fList    = foreign{"list", []string{"RPUSH NAME job"}}
	fSet     = foreign{"set", []string{"SADD NAME m"}}
	fZset    = foreign{"sorted set", []string{"ZADD NAME 1 m"}}
	fStream  = foreign{"stream", []string{"XADD NAME * f v"}}
	fLock    = foreign{"reentrant lock", []string{"HSET NAME " + clitest.JavaA + ":1 1", "PEXPIRE NAME 60000"}}
	fRWLock  = foreign{"read/write lock", []string{"HSET NAME mode read " + clitest.JavaA + ":1 1", "PEXPIRE NAME 60000"}}
	fCounter = foreign{"semaphore count", []string{"SET NAME 5"}}
	fPermits = foreign{"expirable semaphore", []string{"SET NAME 5", "ZADD {NAME}:timeout 9999999999999 0123456789abcdef"}}
)

// Every command, on a name whose key holds what its kind cannot work on,
// exits 64 naming the key and what it holds, runs no CMD, and leaves the
// data as it was (compared with DUMP).
func TestForeignKeys(t *testing.T) {
	t.Parallel()
	_, rc := clitest.NewLockClient(t)
	others := []foreign{fString, fAppHash, fList, fSet, fZset, fStream}
	notLocks := append([]foreign{fRWLock, fCounter}, others...)
	notHalves := append([]foreign{fLock, fCounter}, others...)
	notCounters := append([]foreign{fLock, fRWLock}, others...)
	cmds := []struct {
		args     []string // NAME stands for the name
		foreigns []foreign
		noun     string // what the message says the name is not
	}{
		{[]string{"run", "--wait", "0", "NAME", "--", "echo", "ran"}, notLocks, "reentrant lock"},
		{[]string{"run", "--kind", "fair", "--wait", "0", "NAME", "--", "echo", "ran"}, notLocks, "fair lock"},
		{[]string{"run", "--kind", "fenced", "--wait", "0", "NAME", "--", "echo", "ran"}, notLocks, "fenced lock"},
		{[]string{"run", "--kind", "spin", "--wait", "0", "NAME", "--", "echo", "ran"}, notLocks, "spin lock"},
		{[]string{"run", "--kind", "read", "--wait", "0", "NAME", "--", "echo", "ran"}, notHalves, "read/write lock"},
		{[]string{"run", "--kind", "write", "--wait", "0", "NAME", "--", "echo", "ran"}, notHalves, "read/write lock"},
		{[]string{"run", "--wait", "0", "OTHER", "NAME", "--", "echo", "ran"}, notLocks, "reentrant lock"},
		{[]string{"run", "--kind", "semaphore", "--wait", "0", "NAME", "--", "echo", "ran"}, notCounters, "semaphore"},
		{[]string{"run", "--kind", "expirable-semaphore", "--wait", "0", "NAME", "--", "echo", "ran"}, notCounters, "expirable semaphore"},
		{[]string{"semaphore", "init", "NAME", "1"}, notCounters, "semaphore"},
		{[]string{"semaphore", "add", "NAME", "1"}, notCounters, "semaphore"},
		{[]string{"semaphore", "add", "--kind", "expirable-semaphore", "NAME", "-1"}, notCounters, "expirable semaphore"},
		{[]string{"latch", "init", "NAME", "1"}, append([]foreign{fPermits}, notCounters...), "latch"},
		{[]string{"latch", "countdown", "NAME"}, append([]foreign{fPermits}, notCounters...), "latch"},
		{[]string{"latch", "await", "NAME"}, append([]foreign{fPermits}, notCounters...), "latch"},
		{[]string{"unlock", "--force", "NAME"}, append([]foreign{fCounter}, others...), "reentrant lock"},
		{[]string{"unlock", "--force", "--kind", "fair", "NAME"}, append([]foreign{fCounter}, others...), "fair lock"},
	}
	for _, cmd := range cmds {
		for _, f := range cmd.foreigns {
			shown := cmd.args
			if i := slices.Index(shown, "--"); i >= 0 {
				shown = shown[:i]
			}
			t.Run(strings.Join(shown, " ")+" on "+f.what, func(t *testing.T) {
				t.Parallel()
				name := clitest.LockName(t)
				keys := setUp(t, rc, name, f)
				before := dump(t, rc, keys)
				args := []string{cmd.args[0], "--redis", clitest.RedisURL()}
				for _, a := range cmd.args[1:] {
					switch a {
					case "NAME":
						a = name
					case "OTHER":
						a = name + ":other"
					}
					args = append(args, a)
				}
				res := clitest.RunBinary(t, "", args...)
				assert.Equal(t, exit.Usage, res.Code, "stderr: %s", res.Stderr)
				assert.Contains(t, res.Stderr, `"`+name+`" is no `+cmd.noun+": ")
				assert.Regexp(t, `(nothing was changed|it was not deleted) \(see 'interlock inspect `, res.Stderr)
				assert.Empty(t, res.Stdout, "CMD did not run")
				assert.Equal(t, before, dump(t, rc, keys), "the data is as it was")
			})
		}
	}
}

// setUp writes f's data under name and returns its keys, deleted when the
// test ends.
func setUp(t *testing.T, rc rueidis.Client, name string, f foreign) []string {
	t.Helper()
	var keys, cmds []string
	for _, c := range f.setup {
		words := strings.Fields(c)
		key := strings.ReplaceAll(words[1], "NAME", name)
		keys = append(keys, key)
		words[1] = key
		cmds = append(cmds, strings.Join(words, " "))
	}
	clitest.Do(t, rc, cmds, keys...)
	return keys
}

// dump returns the DUMP of each key: equal dumps, equal data.
func dump(t *testing.T, rc rueidis.Client, keys []string) []string {
	t.Helper()
	out := make([]string, len(keys))
	for i, k := range keys {
		s, err := rc.Do(t.Context(), rc.B().Dump().Key(k).Build()).ToString()
		require.NoError(t, err, k)
		out[i] = s
	}
	return out
}
