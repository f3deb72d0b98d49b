package main

import (
	"context"
	"fmt"
	"os"

	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/demo"
	"github.com/interlock-go/interlock/cmd/interlock/internal/doctor"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/cmd/interlock/internal/inspect"
	"github.com/interlock-go/interlock/cmd/interlock/internal/latchcmd"
	"github.com/interlock-go/interlock/cmd/interlock/internal/leader"
	"github.com/interlock-go/interlock/cmd/interlock/internal/ls"
	"github.com/interlock-go/interlock/cmd/interlock/internal/ratelimitcmd"
	"github.com/interlock-go/interlock/cmd/interlock/internal/run"
	"github.com/interlock-go/interlock/cmd/interlock/internal/semaphorecmd"
	"github.com/interlock-go/interlock/cmd/interlock/internal/unlock"
)

// commands lists the subcommands in the order the usage text gives them.
var commands = []cli.Command{
	run.Command,
	leader.Command,
	semaphorecmd.Command,
	latchcmd.Command,
	ratelimitcmd.Command,
	inspect.Command,
	ls.Command,
	doctor.Command,
	unlock.Command,
	demo.Command,
	demo.HolderCommand,
}

// main runs interlock with the process's arguments and exits with the code
// runMain returns.
func main() {
	os.Exit(runMain(context.Background(), cli.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, Getenv: os.Getenv}, os.Args[1:]))
}

// runMain runs interlock with args (without the program name) and returns
// the exit code, after printing any error on io.Err.
func runMain(ctx context.Context, io cli.Stdio, args []string) int {
	return exit.Report(io.Err, dispatch(ctx, io, args))
}

// dispatch finds the subcommand named by args[0] and runs it.
func dispatch(ctx context.Context, io cli.Stdio, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(io.Err, mainUsage)
		return exit.Status(exit.Usage)
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		return helpCmd(io, args[1:])
	}
	for _, c := range commands {
		if c.Name == args[0] {
			return c.Run(ctx, io, args[1:])
		}
	}
	return cli.Usagef("", "unknown command %q", args[0])
}

// helpCmd prints the usage of interlock, or of the command named in args,
// on stdout.
func helpCmd(io cli.Stdio, args []string) error {
	switch {
	case len(args) == 0:
		fmt.Fprint(io.Out, mainUsage)
		return nil
	case len(args) > 1:
		return cli.Usagef("help", "help takes at most one command name")
	}
	text, ok := commandUsage(args[0])
	if !ok {
		return cli.Usagef("help", "unknown command %q", args[0])
	}
	fmt.Fprint(io.Out, text)
	return nil
}

// commandUsage returns the help of the command called name ("help"
// included), and false when no documented command has that name.
func commandUsage(name string) (string, bool) {
	if name == "help" {
		return mainUsage, true
	}
	for _, c := range commands {
		if c.Name == name && !c.Hidden {
			return c.Usage, true
		}
	}
	return "", false
}
