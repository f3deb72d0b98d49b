// Package latchcmd is "interlock latch": it sets up a Redisson
// count-down latch, counts it down, or waits until it is open.
package latchcmd

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/cmd/interlock/internal/proc"
	"github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"
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
	name := rest[0]
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
	l := latch.New(c.Client, name)
	switch sub {
	case "init":
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
		return exit.Failed("latch countdown", l.CountDown(ctx))
	}
	return awaitLatch(ctx, l, name, *wait)
}

// awaitLatch waits until the latch is open: forever, or for wait when it
// is set. SIGINT or SIGTERM ends the wait with 128+N.
func awaitLatch(ctx context.Context, l *latch.Latch, name string, wait cli.DurationFlag) error {
	ictx, interrupted := proc.Interruptible(ctx)
	defer interrupted()
	wctx, cancel := ictx, context.CancelFunc(func() {})
	if wait.Given {
		wctx, cancel = context.WithTimeout(ictx, wait.D)
	}
	defer cancel()
	err := l.Await(wctx)
	// Stop listening: from here on a signal ends interlock as usual.
	if sig := interrupted(); sig != nil {
		return exit.Errorf(exit.Signal(sig), "%v while waiting for latch %q", sig, name)
	}
	if err == nil {
		return nil
	}
	if !wait.Given || !errors.Is(wctx.Err(), context.DeadlineExceeded) {
		return exit.Failed("latch await", err)
	}
	// The last look, at the deadline: a latch opened just then, or
	// deleted (which wakes nobody), counts as open.
	n, err := l.Count(ctx)
	switch {
	case err != nil:
		return exit.Failed("latch await", err)
	case n > 0:
		return exit.Errorf(exit.Busy, "latch %q is still closed after --wait %v: its count is %d", name, wait.D, n)
	}
	return nil
}
