//go:build unix

package main

import (
	"flag"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/cmd/interlock/internal/inspect"
	"github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"
	"github.com/interlock-go/interlock/cmd/interlock/internal/run"
)

func TestHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		res := runInProcess(t, args...)
		assert.Equal(t, 0, res.Code, args)
		assert.Equal(t, mainUsage, res.Stdout, args)
		assert.Empty(t, res.Stderr, args)
	}
	for _, code := range []int{exit.Failure, exit.Hazard, exit.Usage, exit.Unavailable, exit.Busy, exit.Lost, exit.CannotExec, exit.NotFound} {
		assert.Contains(t, mainUsage, "\n  "+strconv.Itoa(code)+" ", "the exit codes are documented")
	}
	for _, c := range commands {
		if c.Hidden {
			continue
		}
		assert.Contains(t, mainUsage, "\n  interlock "+c.Name+" ", "the overview shows %s", c.Name)
		if strings.Contains(c.Usage, "--name-prefix ") {
			assert.Regexp(t, `\n  interlock `+c.Name+` [^\n]*\[--name-prefix P\]`, mainUsage, "the overview shows %s --name-prefix", c.Name)
		}
		res := runInProcess(t, "help", c.Name)
		assert.Equal(t, 0, res.Code, c.Name)
		assert.Equal(t, c.Usage, res.Stdout, c.Name)
	}
	res := runInProcess(t, "run", "-h")
	assert.Equal(t, 0, res.Code)
	assert.Equal(t, run.Command.Usage, res.Stdout)
	res = runInProcess(t, "inspect", "--help")
	assert.Equal(t, 0, res.Code)
	assert.Equal(t, inspect.Command.Usage, res.Stdout)
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	res := runInProcess(t)
	assert.Equal(t, exit.Usage, res.Code)
	assert.Equal(t, mainUsage, res.Stderr)

	res = runInProcess(t, "frobnicate")
	assert.Equal(t, exit.Usage, res.Code)
	assert.Equal(t, "interlock: unknown command \"frobnicate\" (see 'interlock help')\n", res.Stderr)

	res = runInProcess(t, "help", "frobnicate")
	assert.Equal(t, exit.Usage, res.Code)

	res = runInProcess(t, "demo", "extra")
	assert.Equal(t, exit.Usage, res.Code)
	assert.Contains(t, res.Stderr, "interlock: demo: unexpected argument")
}

// Every flag of every command is documented in its help.
func TestUsageDocumentsEveryFlag(t *testing.T) {
	t.Parallel()
	getenv := func(string) string { return "" }
	sets := map[string]*flag.FlagSet{}
	for _, name := range []string{"run", "semaphore", "latch", "ratelimit", "inspect", "unlock", "demo", "doctor"} {
		fs := flag.NewFlagSet(name, flag.ContinueOnError)
		redisconn.AddFlag(fs, getenv)
		sets[name] = fs
	}
	// The flags each command defines besides --redis.
	sets["run"].String("kind", "", "")
	sets["run"].String("permits", "", "")
	sets["run"].String("wait", "", "")
	sets["run"].String("lease", "", "")
	sets["run"].String("watchdog-timeout", "", "")
	sets["run"].String("grace", "", "")
	sets["inspect"].Bool("json", false, "")
	sets["inspect"].String("kind", "", "")
	sets["semaphore"].String("kind", "", "")
	sets["semaphore"].String("ttl", "", "")
	sets["latch"].String("wait", "", "")
	sets["ratelimit"].Bool("per-client", false, "")
	sets["ratelimit"].String("keep-alive", "", "")
	sets["ratelimit"].Bool("if-unset", false, "")
	sets["ratelimit"].String("permits", "", "")
	sets["ratelimit"].String("wait", "", "")
	sets["unlock"].Bool("force", false, "")
	sets["unlock"].String("kind", "", "")
	sets["demo"].String("chart", "", "")
	sets["doctor"].Bool("json", false, "")
	sets["doctor"].String("name", "", "")
	sets["doctor"].String("acl-user", "", "")
	sets["doctor"].Bool("wait-replicas", false, "")
	for _, name := range []string{"run", "semaphore", "latch", "ratelimit", "inspect", "unlock"} {
		cli.AddNamePrefixFlag(sets[name])
	}
	for name, fs := range sets {
		fs.VisitAll(func(f *flag.Flag) {
			usage, _ := commandUsage(name)
			assert.Contains(t, usage, "--"+f.Name+" ", "%s --%s", name, f.Name)
		})
	}
	// And the real flag sets define no others: unknown flags are refused.
	for _, bad := range []string{"run --nope L -- true", "inspect --nope L", "unlock --nope L", "demo --nope",
		"semaphore --nope init S 1", "latch --nope await L", "ratelimit --nope set R 1 1s", "doctor --nope"} {
		res := runInProcess(t, strings.Fields(bad)...)
		require.Equal(t, exit.Usage, res.Code, bad)
		assert.Contains(t, res.Stderr, "flag provided but not defined: -nope", bad)
	}
}
