//go:build unix

package main

// The user story "every CLI command with bad input": each command of the
// interlock binary, given what a user may get wrong, exits with the code
// its help documents and says why on stderr, and changes nothing in
// Redis. TestBadInput covers flags, arguments, Redis that cannot be used
// and state that refuses the command; TestForeignKeys covers names whose
// keys hold data the command's kind cannot work on.

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/cmd/interlock/internal/clitest"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/ratelimit"
	"github.com/interlock-go/interlock/rlock"
	"github.com/interlock-go/interlock/rwlock"
)

// nowhere is a Redis that does not exist: a usage error must be found
// before interlock tries to reach it.
const nowhere = "redis://127.0.0.1:1"

// badCase is one command line and how interlock must answer it.
type badCase struct {
	args []string // after "interlock"
	code int      // the exit code; the command's help documents it
	want string   // in stderr
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	c, rc := clitest.NewLockClient(t)
	redis := clitest.RedisURL()
	ctx := interlock.WithOwner(t.Context(), 1)

	// State that refuses some commands.
	held := clitest.LockName(t) + ":held"
	require.NoError(t, rlock.New(c, held).Lock(ctx))
	t.Cleanup(func() { _, _ = rlock.New(c, held).ForceUnlock(ctx) })
	written := clitest.LockName(t) + ":written"
	require.NoError(t, rwlock.New(c, written).Write().Lock(ctx))
	t.Cleanup(func() { _, _ = rwlock.New(c, written).Write().ForceUnlock(ctx) })
	sem, closed := clitest.LockName(t)+":sem", clitest.LockName(t)+":closed"
	clitest.Do(t, rc, []string{"SET " + sem + " 2", "SET " + closed + " 2"}, sem, closed)
	rl, rlPC := clitest.LockName(t)+":rl", clitest.LockName(t)+":rlpc"
	clitest.CleanupKeys(t, rc, append(keys.RateLimiter(rl, c.ID()), keys.RateLimiter(rlPC, c.ID())...)...)
	require.NoError(t, ratelimit.New(c, rl).SetRate(ctx, ratelimit.Config{Rate: 2, Interval: time.Minute}))
	require.NoError(t, ratelimit.New(c, rl).Acquire(ctx, 2))
	require.NoError(t, ratelimit.New(c, rlPC).SetRate(ctx, ratelimit.Config{Type: ratelimit.PerClient, Rate: 2, Interval: time.Minute}))
	notExec := filepath.Join(t.TempDir(), "script")
	require.NoError(t, os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644))

	for _, tc := range []badCase{
		// interlock itself
		{nil, exit.Usage, "Usage:"},
		{[]string{"frobnicate"}, exit.Usage, `unknown command "frobnicate"`},
		{[]string{"help", "frobnicate"}, exit.Usage, `help: unknown command "frobnicate"`},
		{[]string{"help", "run", "ls"}, exit.Usage, "help takes at most one command name"},

		// run: flags and arguments, found before Redis is reached
		{[]string{"run", "--redis", nowhere, "L", "true"}, exit.Usage, `missing "--" between LOCK and CMD`},
		{[]string{"run", "--redis", nowhere, "--", "true"}, exit.Usage, `no LOCK before "--"`},
		{[]string{"run", "--redis", nowhere, "L", "--"}, exit.Usage, `no CMD after "--"`},
		{[]string{"run", "--redis", nowhere, "--kind", "redlock", "L", "--", "true"}, exit.Usage, `unknown --kind "redlock"`},
		{[]string{"run", "--redis", nowhere, "--wait", "soon", "L", "--", "true"}, exit.Usage, "not a duration (examples: 500ms, 10s, 2m)"},
		{[]string{"run", "--redis", nowhere, "--wait", "-1s", "L", "--", "true"}, exit.Usage, "must not be negative"},
		{[]string{"run", "--redis", nowhere, "--lease", "500us", "L", "--", "true"}, exit.Usage, "a lease must be at least 1ms"},
		{[]string{"run", "--redis", nowhere, "--watchdog-timeout", "1ms", "L", "--", "true"}, exit.Usage, "the minimum is"},
		{[]string{"run", "--redis", nowhere, "--grace", "x", "L", "--", "true"}, exit.Usage, "not a duration"},
		{[]string{"run", "--redis", nowhere, "--permits", "2", "L", "--", "true"}, exit.Usage, "--permits is for --kind semaphore"},
		{[]string{"run", "--redis", nowhere, "--kind", "semaphore", "--permits", "0", "S", "--", "true"}, exit.Usage, "at least 1 permit is needed"},
		{[]string{"run", "--redis", nowhere, "--kind", "semaphore", "--lease", "1s", "S", "--", "true"}, exit.Usage, "--lease is not for --kind semaphore"},
		{[]string{"run", "--redis", nowhere, "--kind", "semaphore", "A", "B", "--", "true"}, exit.Usage, "takes one NAME, got 2"},
		{[]string{"run", "--redis", nowhere, "L", "L", "--", "true"}, exit.Usage, `lock "L" is given twice`},
		{[]string{"run", "--redis", nowhere, "a{b", "--", "true"}, exit.Usage, "cluster slot"},
		{[]string{"run", "--redis", nowhere, "--nope", "L", "--", "true"}, exit.Usage, "flag provided but not defined: -nope"},
		{[]string{"run", "--redis", "http://h", "L", "--", "true"}, exit.Usage, "--redis http://h"},
		// run: Redis and the lock
		{[]string{"run", "--redis", nowhere, "L", "--", "true"}, exit.Unavailable, "cannot connect to Redis at 127.0.0.1:1"},
		{[]string{"run", "--redis", redis, "--wait", "0", held, "--", "true"}, exit.Busy, `lock "` + held + `" is busy`},
		{[]string{"run", "--redis", redis, clitest.LockName(t) + ":a", "--", "/no/such/cmd"}, exit.NotFound, "/no/such/cmd"},
		{[]string{"run", "--redis", redis, clitest.LockName(t) + ":b", "--", notExec}, exit.CannotExec, notExec},

		// run --kind ratelimit
		{[]string{"run", "--redis", nowhere, "--kind", "ratelimit", "--lease", "1s", "R", "--", "true"}, exit.Usage, "--lease is not for --kind ratelimit"},
		{[]string{"run", "--redis", nowhere, "--kind", "ratelimit", "--watchdog-timeout", "1m", "R", "--", "true"}, exit.Usage,
			"--watchdog-timeout is not for --kind ratelimit"},
		{[]string{"run", "--redis", nowhere, "--kind", "ratelimit", "--grace", "1s", "R", "--", "true"}, exit.Usage, "--grace is not for --kind ratelimit"},
		{[]string{"run", "--redis", nowhere, "--kind", "ratelimit", "--permits", "0", "R", "--", "true"}, exit.Usage, "at least 1 permit is needed"},
		{[]string{"run", "--redis", nowhere, "--kind", "ratelimit", "A", "B", "--", "true"}, exit.Usage, "takes one NAME, got 2"},
		{[]string{"run", "--redis", redis, "--kind", "ratelimit", "--wait", "0", rl, "--", "true"}, exit.Busy, `rate limiter "` + rl + `" is busy: 1 permit was not free`},
		{[]string{"run", "--redis", redis, "--kind", "ratelimit", "--permits", "3", rl, "--", "true"}, exit.Usage, "--permits 3 exceeds the rate"},
		{[]string{"run", "--redis", redis, "--kind", "ratelimit", rlPC, "--", "true"}, exit.Usage, "is PER_CLIENT"},
		{[]string{"run", "--redis", redis, "--kind", "ratelimit", sem, "--", "true"}, exit.Usage, "is no rate limiter: it holds the integer 2"},
		{[]string{"run", "--redis", redis, "--kind", "ratelimit", rl + ":unset", "--", "true"}, exit.Failure, "is not set"},

		// ratelimit
		{[]string{"ratelimit", "--redis", nowhere}, exit.Usage, "want a subcommand: set or acquire"},
		{[]string{"ratelimit", "--redis", nowhere, "set", "R", "1", "0s"}, exit.Usage, "at least 1ms"},
		{[]string{"ratelimit", "--redis", nowhere, "set", "--keep-alive", "1s", "R", "1", "1m"}, exit.Usage, "must be at least the interval 1m0s"},
		{[]string{"ratelimit", "--redis", nowhere, "acquire", "--permits", "-1", "R"}, exit.Usage, "at least 1 permit is needed"},
		{[]string{"ratelimit", "--redis", nowhere, "acquire", "R"}, exit.Unavailable, "cannot connect to Redis"},
		{[]string{"ratelimit", "--redis", redis, "acquire", "--wait", "10ms", rl}, exit.Busy, "1 permit was not free within --wait 10ms"},
		{[]string{"ratelimit", "--redis", redis, "set", "--if-unset", rl, "3", "1m"}, exit.Failure, "is already set to 2 permits per 1m0s"},
		{[]string{"ratelimit", "--redis", redis, "set", held, "3", "1m"}, exit.Usage, "is no rate limiter: it holds a lock"},

		// semaphore
		{[]string{"semaphore", "--redis", nowhere}, exit.Usage, "want a subcommand: init or add"},
		{[]string{"semaphore", "--redis", nowhere, "drain", "S"}, exit.Usage, `unknown subcommand "drain"`},
		{[]string{"semaphore", "--redis", nowhere, "init", "S"}, exit.Usage, "init: want NAME and N, got 1 arguments"},
		{[]string{"semaphore", "--redis", nowhere, "init", "S", "1", "2"}, exit.Usage, "init: want NAME and N, got 3 arguments"},
		{[]string{"semaphore", "--redis", nowhere, "init", "S", "x"}, exit.Usage, `init: N "x" is not an integer`},
		{[]string{"semaphore", "--redis", nowhere, "init", "S", "-1"}, exit.Usage, "init: -1 permits: the count must not be negative"},
		{[]string{"semaphore", "--redis", nowhere, "add", "S", "0"}, exit.Usage, "add: 0 permits: nothing to add"},
		{[]string{"semaphore", "--redis", nowhere, "add", "--ttl", "1s", "S", "1"}, exit.Usage, "--ttl is for init only"},
		{[]string{"semaphore", "--redis", nowhere, "init", "--ttl", "500us", "S", "1"}, exit.Usage, "a TTL must be at least 1ms"},
		{[]string{"semaphore", "--redis", nowhere, "init", "--kind", "latch", "S", "1"}, exit.Usage, `unknown --kind "latch"`},
		{[]string{"semaphore", "--redis", nowhere, "init", "}x", "1"}, exit.Usage, "cluster slot"},
		{[]string{"semaphore", "--redis", nowhere, "init", "S", "1"}, exit.Unavailable, "cannot connect to Redis"},
		{[]string{"semaphore", "--redis", redis, "init", sem, "1"}, exit.Failure, `"` + sem + `" is already set (2 permits available)`},

		// latch
		{[]string{"latch", "--redis", nowhere}, exit.Usage, "want a subcommand: init, countdown or await"},
		{[]string{"latch", "--redis", nowhere, "open", "L"}, exit.Usage, `unknown subcommand "open"`},
		{[]string{"latch", "--redis", nowhere, "init", "L"}, exit.Usage, "init: want NAME and N, got 1 arguments"},
		{[]string{"latch", "--redis", nowhere, "init", "L", "-1"}, exit.Usage, "init: count -1 must not be negative"},
		{[]string{"latch", "--redis", nowhere, "init", "L", "1.5"}, exit.Usage, `init: N "1.5" is not an integer`},
		{[]string{"latch", "--redis", nowhere, "await"}, exit.Usage, "await: want NAME, got 0 arguments"},
		{[]string{"latch", "--redis", nowhere, "countdown", "--wait", "1s", "L"}, exit.Usage, "--wait is for await only"},
		{[]string{"latch", "--redis", nowhere, "await", "--wait", "soon", "L"}, exit.Usage, "not a duration"},
		{[]string{"latch", "--redis", nowhere, "countdown", "a{b"}, exit.Usage, "cluster slot"},
		{[]string{"latch", "--redis", nowhere, "await", "L"}, exit.Unavailable, "cannot connect to Redis"},
		{[]string{"latch", "--redis", redis, "init", closed, "1"}, exit.Failure, `"` + closed + `" is already set (count 2)`},
		{[]string{"latch", "--redis", redis, "await", "--wait", "100ms", closed}, exit.Busy, "is still closed after --wait 100ms: its count is 2"},

		// inspect
		{[]string{"inspect", "--redis", nowhere}, exit.Usage, "no LOCK given"},
		{[]string{"inspect", "--redis", nowhere, "--kind", "lock", "L"}, exit.Usage, `unknown --kind "lock"`},
		{[]string{"inspect", "--redis", nowhere, "ok", "a{b"}, exit.Usage, `name "a{b"`},
		{[]string{"inspect", "--redis", nowhere, "L"}, exit.Unavailable, "cannot connect to Redis"},

		// ls
		{[]string{"ls", "--redis", nowhere, "a", "b"}, exit.Usage, "at most one PATTERN"},
		{[]string{"ls", "--redis", nowhere, "--limit", "-1"}, exit.Usage, "--limit must not be negative"},
		{[]string{"ls", "--redis", nowhere, "--count", "0"}, exit.Usage, "--count must be at least 1"},
		{[]string{"ls", "--redis", nowhere, "--progress", "soon"}, exit.Usage, "or off"},
		{[]string{"ls", "--redis", nowhere}, exit.Unavailable, "cannot connect to Redis"},

		// doctor
		{[]string{"doctor", "--redis", nowhere, "extra"}, exit.Usage, `unexpected argument "extra"`},
		{[]string{"doctor", "--redis", nowhere, "--name", "a{b"}, exit.Usage, "--name"},
		{[]string{"doctor", "--redis", nowhere}, exit.Unavailable, "cannot connect to Redis"},

		// unlock
		{[]string{"unlock", "--redis", nowhere, "L"}, exit.Usage, "refusing to unlock"},
		{[]string{"unlock", "--redis", nowhere, "--force"}, exit.Usage, "want exactly one LOCK, got 0"},
		{[]string{"unlock", "--redis", nowhere, "--force", "a", "b"}, exit.Usage, "want exactly one LOCK, got 2"},
		{[]string{"unlock", "--redis", nowhere, "--force", "--kind", "spin", "L"}, exit.Usage, `unknown --kind "spin"`},
		{[]string{"unlock", "--redis", nowhere, "--force", "L"}, exit.Unavailable, "cannot connect to Redis"},
		{[]string{"unlock", "--redis", redis, "--force", "--kind", "read", written}, exit.Failure, "it is not locked as a read lock"},
		{[]string{"unlock", "--redis", redis, "--force", "--kind", "fair", written}, exit.Usage, "is a read/write lock, not a fair lock"},

		// demo
		{[]string{"demo", "--redis", nowhere, "extra"}, exit.Usage, "unexpected argument"},
		{[]string{"demo", "--chart"}, exit.Usage, "flag needs an argument: -chart"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			checkBad(t, tc)
		})
	}
	assert.True(t, clitest.Exists(t, rc, held), "the held lock is still held")
	assert.Equal(t, int64(2), clitest.Available(t, rc, sem), "the semaphore is as it was")
}

// checkBad runs the binary with tc.args and checks its answer against tc
// and against the command's help.
func checkBad(t *testing.T, tc badCase) {
	t.Helper()
	res := clitest.RunBinary(t, "", tc.args...)
	assert.Equal(t, tc.code, res.Code, "stderr: %s", res.Stderr)
	assert.Contains(t, res.Stderr, tc.want)
	if len(tc.args) > 0 {
		assert.True(t, strings.HasPrefix(res.Stderr, "interlock: "), "stderr: %s", res.Stderr)
		assert.Empty(t, res.Stdout)
		help, ok := commandUsage(tc.args[0])
		if !ok {
			help = mainUsage
		}
		assert.Regexp(t, regexp.MustCompile(`(?s)Exit status:.*\b`+strconv.Itoa(tc.code)+`\b`), help, "the help documents exit %d", tc.code)
	}
}

// A server that wants a password: interlock says how to give it, exits
// 69 as for a Redis it cannot use, and never shows the password.
func TestBadPassword(t *testing.T) {
	t.Parallel()
	srv := redistest.Standalone(t)
	rc := srv.Client(t)
	require.NoError(t, rc.Do(t.Context(), rc.B().ConfigSet().ParameterValue().ParameterValue("requirepass", "s3cret-pw").Build()).Error())
	for _, tc := range []badCase{
		{[]string{"inspect", "--redis", "redis://" + srv.Addr(), "L"}, exit.Unavailable,
			"the server wants a password: give it in the URL, --redis redis://:PASSWORD@host:port (redis://USER:PASSWORD@host:port for an ACL user), or in $INTERLOCK_REDIS (NOAUTH"},
		{[]string{"run", "--redis", "redis://" + srv.Addr(), "L", "--", "true"}, exit.Unavailable, "the server wants a password"},
		{[]string{"doctor", "--redis", "redis://" + srv.Addr()}, exit.Unavailable, "the server wants a password"},
		{[]string{"inspect", "--redis", "redis://:wrong-pw@" + srv.Addr(), "L"}, exit.Unavailable,
			"the server refused the user or password given: check them in --redis redis://[USER]:PASSWORD@host:port, or in $INTERLOCK_REDIS (WRONGPASS"},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			checkBad(t, tc)
		})
	}
	res := clitest.RunBinary(t, "", "inspect", "--redis", "redis://:s3cret-pw@"+srv.Addr(), "--json", "L")
	assert.Equal(t, 0, res.Code, "with the password: %s", res.Stderr)
}

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
	fRate    = foreign{"rate limiter", []string{"HSET NAME rate 5 interval 1000 type 0 keepAliveTime 0"}}
	fRateBad = foreign{"rate limiter config that does not parse", []string{"HSET NAME rate many interval 1000 type 0"}}
	fRateVal = foreign{"rate limiter count that is no integer", []string{"HSET NAME rate 5 interval 1000 type 0", "SET {NAME}:value hello"}}
)

// Every command, on a name whose key holds what its kind cannot work on,
// exits 64 naming the key and what it holds, runs no CMD, and leaves the
// data as it was (compared with DUMP).
func TestForeignKeys(t *testing.T) {
	t.Parallel()
	_, rc := clitest.NewLockClient(t)
	others := []foreign{fString, fAppHash, fList, fSet, fZset, fStream}
	notLocks := append([]foreign{fRWLock, fCounter, fRate}, others...)
	notHalves := append([]foreign{fLock, fCounter, fRate}, others...)
	notCounters := append([]foreign{fLock, fRWLock, fRate}, others...)
	notRates := append([]foreign{fLock, fRWLock, fCounter, fRateBad, fRateVal}, others...)
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
		{[]string{"run", "--kind", "ratelimit", "--wait", "0", "NAME", "--", "echo", "ran"}, notRates, "rate limiter"},
		{[]string{"ratelimit", "set", "NAME", "1", "1s"}, notRates, "rate limiter"},
		{[]string{"ratelimit", "acquire", "--wait", "0", "NAME"}, []foreign{fRateBad, fRateVal, fAppHash}, "rate limiter"},
		{[]string{"semaphore", "init", "NAME", "1"}, notCounters, "semaphore"},
		{[]string{"semaphore", "add", "NAME", "1"}, notCounters, "semaphore"},
		{[]string{"semaphore", "add", "--kind", "expirable-semaphore", "NAME", "-1"}, notCounters, "expirable semaphore"},
		{[]string{"latch", "init", "NAME", "1"}, append([]foreign{fPermits}, notCounters...), "latch"},
		{[]string{"latch", "countdown", "NAME"}, append([]foreign{fPermits}, notCounters...), "latch"},
		{[]string{"latch", "await", "NAME"}, append([]foreign{fPermits}, notCounters...), "latch"},
		{[]string{"unlock", "--force", "NAME"}, append([]foreign{fCounter, fRate}, others...), "reentrant lock"},
		{[]string{"unlock", "--force", "--kind", "fair", "NAME"}, append([]foreign{fCounter, fRate}, others...), "fair lock"},
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
