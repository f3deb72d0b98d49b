package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
)

// stdio is where a command reads and writes. run hands the files to CMD
// as they are, so they are *os.File rather than io.Reader and io.Writer:
// the child then shares them and no copying goroutine is needed.
type stdio struct {
	in       *os.File
	out, err io.Writer
	// getenv reads the environment (INTERLOCK_REDIS); tests replace it.
	getenv func(string) string
}

// command is one subcommand: it parses args (everything after its name)
// and does its work. The returned error decides the exit code and what is
// printed on stderr (exit.Report).
type command struct {
	name   string
	run    func(ctx context.Context, io stdio, args []string) error
	hidden bool // left out of the usage text
}

// commands lists the subcommands in the order the usage text gives them.
var commands = []command{
	{name: "run", run: runCmd},
	{name: "semaphore", run: semaphoreCmd},
	{name: "latch", run: latchCmd},
	{name: "inspect", run: inspectCmd},
	{name: "ls", run: lsCmd},
	{name: "doctor", run: doctorCmd},
	{name: "unlock", run: unlockCmd},
	{name: "demo", run: demoCmd},
	{name: holderCmdName, run: holderCmd, hidden: true},
}

// main runs interlock with the process's arguments and exits with the code
// cli returns.
func main() {
	os.Exit(cli(context.Background(), stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr, getenv: os.Getenv}, os.Args[1:]))
}

// cli runs interlock with args (without the program name) and returns the
// exit code, after printing any error on io.err.
func cli(ctx context.Context, io stdio, args []string) int {
	return exit.Report(io.err, dispatch(ctx, io, args))
}

// dispatch finds the subcommand named by args[0] and runs it.
func dispatch(ctx context.Context, io stdio, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(io.err, mainUsage)
		return exit.Status(exit.Usage)
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		return helpCmd(io, args[1:])
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(ctx, io, args[1:])
		}
	}
	return usageErrorf("", "unknown command %q", args[0])
}

// helpCmd prints the usage of interlock, or of the command named in args,
// on stdout.
func helpCmd(io stdio, args []string) error {
	switch {
	case len(args) == 0:
		fmt.Fprint(io.out, mainUsage)
		return nil
	case len(args) > 1:
		return usageErrorf("help", "help takes at most one command name")
	}
	text, ok := commandUsage[args[0]]
	if !ok {
		return usageErrorf("help", "unknown command %q", args[0])
	}
	fmt.Fprint(io.out, text)
	return nil
}
