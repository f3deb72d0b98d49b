// Package latchcmd is "interlock latch": it sets up a Redisson
// count-down latch, counts it down, or waits until it is open.
package latchcmd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/cmd/interlock/internal/inspect"
	"github.com/interlock-go/interlock/cmd/interlock/internal/kinds"
	"github.com/interlock-go/interlock/cmd/interlock/internal/proc"
	"github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"
	"github.com/interlock-go/interlock/cmd/interlock/internal/waitnote"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/latch"
)

// Command is "interlock latch init NAME N", "latch countdown NAME" and
// "latch await [--wait D] NAME": RCountDownLatch's trySetCount, countDown
// and await.
var Command = cli.Command{Name: "latch", Usage: usage, Run: run}

// run is Command's Run.
func run(ctx context.Context, io cli.Stdio, args []string) error {
	fs := cli.NewFlagSet("latch", usage)
	redis := redisconn.AddFlag(fs.FlagSet, io.Getenv)
	prefix := cli.AddNamePrefixFlag(fs.FlagSet)
	wait := &cli.DurationFlag{Unset: "forever"}
	fs.Var(wait, "wait", "how long await waits")
	positional, err := fs.ParseNumbers(io, args)
	if err != nil {
		return err
	}
	if len(positional) == 0 {
		return cli.Usagef("latch", "want a subcommand: init, countdown or await")
	}
	sub, rest := positional[0], positional[1:]
	want := 1 // NAME
	switch sub {
	case "init":
		want = 2 // NAME N
	case "countdown", "await":
	default:
		return cli.Usagef("latch", "unknown subcommand %q (want init, countdown or await)", sub)
	}
	if len(rest) != want {
		args := "NAME"
		if want == 2 {
			args = "NAME and N"
		}
		return cli.Usagef("latch", "%s: want %s, got %d arguments", sub, args, len(rest))
	}
	name := *prefix + rest[0] // the key: what a prefixing NameMapper maps it to
	if err := keys.Check(name); err != nil {
		return cli.Usagef("latch", "%v", err)
	}
	if wait.Given && sub != "await" {
		return cli.Usagef("latch", "--wait is for await only")
	}
	var count int64
	if sub == "init" {
		if count, err = strconv.ParseInt(rest[1], 10, 64); err != nil {
			return cli.Usagef("latch", "init: N %q is not an integer", rest[1])
		}
		if count < 0 {
			return cli.Usagef("latch", "init: count %d must not be negative", count)
		}
	}

	c, err := redisconn.Connect(redis.URLs)
	if err != nil {
		return err
	}
	defer c.Close()
	look := inspect.CommandLine(redis, kinds.Latch, name)
	l := latch.New(c.Client, name)
	switch sub {
	case "init":
		if err := inspect.Check(ctx, c.Redis, name, kinds.Latch); err != nil {
			return inspect.Refusal("latch init", err, look)
		}
		ok, err := l.TrySetCount(ctx, count)
		if err != nil {
			return exit.Failed("latch init", err)
		}
		if !ok {
			n, err := l.Count(ctx)
			if errors.Is(err, interlock.ErrInvalid) {
				return exit.Failed("latch init", err) // a lock's hash, say
			}
			if err != nil {
				return exit.Errorf(exit.Failure, "latch init: %q is already set; nothing changed", name)
			}
			return exit.Errorf(exit.Failure, "latch init: %q is already set (count %d); nothing changed", name, n)
		}
		fmt.Fprintf(io.Out, "%s: count set to %d\n", name, count)
		return nil
	case "countdown":
		if err := inspect.Check(ctx, c.Redis, name, kinds.Latch); err != nil {
			return inspect.Refusal("latch countdown", err, look)
		}
		return exit.Failed("latch countdown", l.CountDown(ctx))
	}
	countdown := strings.Join(slices.DeleteFunc([]string{"interlock", "latch", "countdown", redis.Arg(), cli.ShellQuote(name)},
		func(s string) bool { return s == "" }), " ")
	return awaitLatch(ctx, io, c, l, look, countdown, *wait)
}

// awaitLatch waits until the latch is open: forever, or for wait when it
// is set, saying once on io.Err what it waits for when that lasts. SIGINT
// or SIGTERM ends the wait with 128+N.
func awaitLatch(ctx context.Context, io cli.Stdio, c *redisconn.Conn, l *latch.Latch, look, countdown string, wait cli.DurationFlag) error {
	ictx, interrupted := proc.Interruptible(ctx)
	defer interrupted()
	err := await(ictx, io, c, l, look, countdown, wait)
	// Stop listening: from here on a signal ends interlock as usual.
	if sig := interrupted(); sig != nil {
		return exit.Errorf(exit.Signal(sig), "%v while waiting for latch %q", sig, l.Name())
	}
	return err
}

// await is awaitLatch's work, ended by ctx: it checks the latch's key,
// waits, and returns the command's error. look and countdown are the
// command lines that inspect the latch and count it down.
func await(ctx context.Context, io cli.Stdio, c *redisconn.Conn, l *latch.Latch, look, countdown string, wait cli.DurationFlag) error {
	if err := inspect.Check(ctx, c.Redis, l.Name(), kinds.Latch); err != nil {
		return inspect.Refusal("latch await", err, look)
	}
	wctx, cancel := ctx, context.CancelFunc(func() {})
	if wait.Given {
		wctx, cancel = context.WithTimeout(ctx, wait.D)
	}
	defer cancel()
	quiet := waitnote.Start(wctx, io.Err, waitnote.After, waitNote(c, l.Name(), look, countdown))
	err := l.Await(wctx)
	quiet()
	switch {
	case err == nil:
		return nil
	case !wait.Given || !errors.Is(wctx.Err(), context.DeadlineExceeded):
		return exit.Failed("latch await", err)
	}
	// The last look, at the deadline: a latch opened just then, or
	// deleted (which wakes nobody), counts as open.
	n, err := l.Count(ctx)
	switch {
	case err != nil:
		return exit.Failed("latch await", err)
	case n > 0:
		return exit.Errorf(exit.Busy, "latch %q is still closed after --wait %v: its count is %d", l.Name(), wait.D, n)
	}
	return nil
}

// waitNote returns what latch await says once it has waited
// waitnote.After: the latch's count, and how to count it down and look.
func waitNote(c *redisconn.Conn, name, look, countdown string) func(context.Context) string {
	return func(ctx context.Context) string {
		f, err := inspect.Probe(ctx, c.Redis, name)
		if err != nil {
			return "" // the wait itself reports a Redis that fails
		}
		r := inspect.Decode(f, kinds.Latch)
		if r.Count == nil || *r.Count <= 0 {
			return "" // open by now
		}
		return fmt.Sprintf("still waiting for latch %q after %v: its count is %d, and each '%s' takes 1 off; '%s' shows more",
			name, waitnote.After, *r.Count, countdown, look)
	}
}
