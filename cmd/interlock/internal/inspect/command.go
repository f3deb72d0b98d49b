// Package inspect is "interlock inspect", and the reading and decoding of
// what Redis holds under one name, which ls and unlock use too: Probe
// reads the facts, DetectKind names the kind they show and Decode turns
// them into a Report, printed as a table or as JSON.
package inspect

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"
	"github.com/interlock-go/interlock/internal/keys"
)

// Command is "interlock inspect": it decodes and prints what Redis holds
// for each name given, a lock, a semaphore or a latch.
var Command = cli.Command{Name: "inspect", Usage: usage, Run: run}

// run is Command's Run.
func run(ctx context.Context, io cli.Stdio, args []string) error {
	fs := cli.NewFlagSet("inspect", usage)
	redis := redisconn.AddFlag(fs.FlagSet, io.Getenv)
	prefix := cli.AddNamePrefixFlag(fs.FlagSet)
	asJSON := fs.Bool("json", false, "print JSON")
	hint := fs.String("kind", "", "what a counter is: semaphore, expirable-semaphore or latch")
	names, err := fs.ParseArgs(io, args)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return cli.Usagef("inspect", "no LOCK given")
	}
	if *hint != "" && !slices.Contains(hintKinds, *hint) {
		return cli.Usagef("inspect", "unknown --kind %q (want %s)", *hint, strings.Join(hintKinds, ", "))
	}
	for i, name := range names {
		names[i] = *prefix + name // the key: what a prefixing NameMapper maps name to
		if err := keys.Check(names[i]); err != nil {
			return cli.Usagef("inspect", "%v", err)
		}
	}
	c, err := redisconn.Connect(redis.URLs)
	if err != nil {
		return err
	}
	defer c.Close()
	reports := make([]Report, 0, len(names))
	for _, name := range names {
		f, err := Probe(ctx, c.Redis, name)
		if err != nil {
			return exit.Failed(fmt.Sprintf("inspect %q", name), err)
		}
		subs, err := CountSubscribers(ctx, c.Redis, name)
		if err != nil {
			return exit.Failed(fmt.Sprintf("inspect %q", name), err)
		}
		// Waiters tell a semaphore (or a latch) nobody set up from a free
		// name.
		h := *hint
		if h == "" {
			h = subs.Hint(f)
		}
		r := Decode(f, h)
		r.Subscribers = subs.Total()
		reports = append(reports, r)
	}
	if *asJSON {
		err = writeJSON(io.Out, reports)
	} else {
		err = writeTable(io.Out, reports)
	}
	return exit.WithCode(exit.Failure, err)
}
