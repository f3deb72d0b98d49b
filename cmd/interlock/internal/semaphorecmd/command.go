// Package semaphorecmd is "interlock semaphore": it sets up a Redisson
// semaphore's permits, or adds some (run --kind semaphore holds them).
package semaphorecmd

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/cmd/interlock/internal/inspect"
	"github.com/interlock-go/interlock/cmd/interlock/internal/kinds"
	"github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/semaphore"
)

// Command is "interlock semaphore init|add NAME N": TrySetPermits and
// AddPermits.
var Command = cli.Command{Name: "semaphore", Usage: usage, Run: run}

// run is Command's Run.
func run(ctx context.Context, io cli.Stdio, args []string) error {
	fs := cli.NewFlagSet("semaphore", usage)
	redis := redisconn.AddFlag(fs.FlagSet, io.Getenv)
	prefix := cli.AddNamePrefixFlag(fs.FlagSet)
	kind := fs.String("kind", kinds.Semaphore, "semaphore kind")
	ttl := &cli.DurationFlag{}
	fs.Var(ttl, "ttl", "time to live of a new semaphore")
	positional, err := fs.ParseNumbers(io, args)
	if err != nil {
		return err
	}
	if len(positional) == 0 {
		return cli.Usagef("semaphore", "want a subcommand: init or add")
	}
	sub, rest := positional[0], positional[1:]
	if sub != "init" && sub != "add" {
		return cli.Usagef("semaphore", "unknown subcommand %q (want init or add)", sub)
	}
	if len(rest) != 2 {
		return cli.Usagef("semaphore", "%s: want NAME and N, got %d arguments", sub, len(rest))
	}
	name := *prefix + rest[0] // the key: what a prefixing NameMapper maps it to
	if err := keys.Check(name); err != nil {
		return cli.Usagef("semaphore", "%v", err)
	}
	if !kinds.IsSemaphore(*kind) {
		return cli.Usagef("semaphore", "unknown --kind %q (want %s or %s)", *kind, kinds.Semaphore, kinds.Expirable)
	}
	n, err := strconv.Atoi(rest[1])
	if err != nil {
		return cli.Usagef("semaphore", "%s: N %q is not an integer", sub, rest[1])
	}
	switch {
	case sub == "init" && n < 0:
		return cli.Usagef("semaphore", "init: %d permits: the count must not be negative", n)
	case sub == "add" && n == 0:
		return cli.Usagef("semaphore", "add: 0 permits: nothing to add (a negative N takes permits away)")
	case ttl.Given && sub != "init":
		return cli.Usagef("semaphore", "--ttl is for init only")
	case ttl.Given && *kind == kinds.Expirable:
		return cli.Usagef("semaphore", "--ttl is for --kind %s only: Redisson's expirable semaphore has no "+
			"trySetPermits with a TTL", kinds.Semaphore)
	case ttl.Given && ttl.D < time.Millisecond:
		return cli.Usagef("semaphore", "--ttl %v: a TTL must be at least 1ms", ttl.D)
	}

	c, err := redisconn.Connect(redis.URLs)
	if err != nil {
		return err
	}
	defer c.Close()
	// Refused before anything changes: a key of other data, or a
	// counter that is no integer, which the scripts may find only halfway.
	if err := inspect.Check(ctx, c.Redis, name, *kind); err != nil {
		return inspect.Refusal("semaphore "+sub, err, inspect.CommandLine(redis, *kind, name))
	}
	plain := semaphore.New(c.Client, name)
	if sub == "add" {
		if *kind == kinds.Expirable {
			err = semaphore.NewExpirable(c.Client, name).AddPermits(ctx, n)
		} else {
			err = plain.AddPermits(ctx, n)
		}
		if err != nil {
			return exit.Failed("semaphore add", err)
		}
		if n > 0 {
			fmt.Fprintf(io.Out, "%s: added %s\n", name, cli.Plural(n, "permit"))
		} else {
			fmt.Fprintf(io.Out, "%s: took away %s\n", name, cli.Plural(-n, "permit"))
		}
		return nil
	}
	// Both kinds create the semaphore with the same script.
	var ok bool
	if ttl.Given {
		ok, err = plain.TrySetPermitsTTL(ctx, n, ttl.D)
	} else {
		ok, err = plain.TrySetPermits(ctx, n)
	}
	if err != nil {
		return exit.Failed("semaphore init", err)
	}
	if !ok {
		free, err := plain.Available(ctx)
		if err != nil {
			return exit.Errorf(exit.Failure, "semaphore init: %q is already set; nothing changed", name)
		}
		return exit.Errorf(exit.Failure, "semaphore init: %q is already set (%s available); nothing changed", name, cli.Plural(int(free), "permit"))
	}
	fmt.Fprintf(io.Out, "%s: set to %s\n", name, cli.Plural(n, "permit"))
	return nil
}
