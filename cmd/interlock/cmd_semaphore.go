package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/semaphore"
)

// semaphoreCmd is "interlock semaphore init|add NAME N": TrySetPermits
// and AddPermits.
func semaphoreCmd(ctx context.Context, io stdio, args []string) error {
	fs := newFlagSet("semaphore")
	redis := addRedisFlag(fs, io.getenv)
	kind := fs.String("kind", kindSemaphore, "semaphore kind")
	ttl := &durationFlag{}
	fs.Var(ttl, "ttl", "time to live of a new semaphore")
	positional, err := parseFlagsNumbers(fs, io, args)
	if err != nil {
		return err
	}
	if len(positional) == 0 {
		return usageErrorf("semaphore", "want a subcommand: init or add")
	}
	sub, rest := positional[0], positional[1:]
	if sub != "init" && sub != "add" {
		return usageErrorf("semaphore", "unknown subcommand %q (want init or add)", sub)
	}
	if len(rest) != 2 {
		return usageErrorf("semaphore", "%s: want NAME and N, got %d arguments", sub, len(rest))
	}
	name := rest[0]
	if err := keys.Check(name); err != nil {
		return usageErrorf("semaphore", "%v", err)
	}
	if !isSemaphoreKind(*kind) {
		return usageErrorf("semaphore", "unknown --kind %q (want %s or %s)", *kind, kindSemaphore, kindExpirable)
	}
	n, err := strconv.Atoi(rest[1])
	if err != nil {
		return usageErrorf("semaphore", "%s: N %q is not an integer", sub, rest[1])
	}
	switch {
	case sub == "init" && n < 1:
		return usageErrorf("semaphore", "init: %d permits: at least 1 is needed", n)
	case sub == "add" && n == 0:
		return usageErrorf("semaphore", "add: 0 permits: nothing to add (a negative N takes permits away)")
	case ttl.set && sub != "init":
		return usageErrorf("semaphore", "--ttl is for init only")
	case ttl.set && *kind == kindExpirable:
		return usageErrorf("semaphore", "--ttl is for --kind %s only: Redisson's expirable semaphore has no "+
			"trySetPermits with a TTL", kindSemaphore)
	case ttl.set && ttl.d < time.Millisecond:
		return usageErrorf("semaphore", "--ttl %v: a TTL must be at least 1ms", ttl.d)
	}

	c, err := connect(redis.urls)
	if err != nil {
		return err
	}
	defer c.Close()
	plain := semaphore.New(c.lc, name)
	if sub == "add" {
		if *kind == kindExpirable {
			err = semaphore.NewExpirable(c.lc, name).AddPermits(ctx, n)
		} else {
			err = plain.AddPermits(ctx, n)
		}
		if err != nil {
			return exit.Failed("semaphore add", err)
		}
		if n > 0 {
			fmt.Fprintf(io.out, "%s: added %s\n", name, plural(n, "permit"))
		} else {
			fmt.Fprintf(io.out, "%s: took away %s\n", name, plural(-n, "permit"))
		}
		return nil
	}
	// Both kinds create the semaphore with the same script.
	var ok bool
	if ttl.set {
		ok, err = plain.TrySetPermitsTTL(ctx, n, ttl.d)
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
		return exit.Errorf(exit.Failure, "semaphore init: %q is already set (%s available); nothing changed", name, plural(int(free), "permit"))
	}
	fmt.Fprintf(io.out, "%s: set to %s\n", name, plural(n, "permit"))
	return nil
}
