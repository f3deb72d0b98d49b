package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/internal/keys"
)

// inspectCmd is "interlock inspect": decode and print what Redis holds for
// each name: a lock, a semaphore or a latch.
func inspectCmd(ctx context.Context, io stdio, args []string) error {
	fs := newFlagSet("inspect")
	redis := addRedisFlag(fs, io.getenv)
	prefix := addNamePrefixFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	hint := fs.String("kind", "", "what a counter is: semaphore, expirable-semaphore or latch")
	names, err := parseFlags(fs, io, args)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return usageErrorf("inspect", "no LOCK given")
	}
	if *hint != "" && !slices.Contains(inspectKinds, *hint) {
		return usageErrorf("inspect", "unknown --kind %q (want %s)", *hint, strings.Join(inspectKinds, ", "))
	}
	for i, name := range names {
		names[i] = *prefix + name // the key: what a prefixing NameMapper maps name to
		if err := keys.Check(names[i]); err != nil {
			return usageErrorf("inspect", "%v", err)
		}
	}
	c, err := connect(redis.urls)
	if err != nil {
		return err
	}
	defer c.Close()
	reports := make([]lockReport, 0, len(names))
	for _, name := range names {
		f, err := probe(ctx, c.rc, name)
		if err != nil {
			return exit.Failed(fmt.Sprintf("inspect %q", name), err)
		}
		reports = append(reports, decodeAs(f, *hint))
	}
	if *asJSON {
		err = writeJSON(io.out, reports)
	} else {
		err = writeTable(io.out, reports)
	}
	return exit.WithCode(exit.Failure, err)
}
