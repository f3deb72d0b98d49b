// Package unlock is "interlock unlock --force": it deletes a lock whoever
// holds it, with the ForceUnlock of the kind inspect finds in Redis, or of
// the kind --kind names when Redis does not contradict it, and refuses a
// key that is no lock of that kind.
package unlock

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/cmd/interlock/internal/inspect"
	"github.com/interlock-go/interlock/cmd/interlock/internal/kinds"
	"github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"
	"github.com/interlock-go/interlock/internal/keys"
)

// Command is "interlock unlock --force [--kind KIND] LOCK": the
// ForceUnlock of the lock's kind, as found in Redis or as --kind says.
var Command = cli.Command{Name: "unlock", Usage: usage, Run: run}

// run is Command's Run.
func run(ctx context.Context, io cli.Stdio, args []string) error {
	fs := cli.NewFlagSet("unlock", usage)
	redis := redisconn.AddFlag(fs.FlagSet, io.Getenv)
	prefix := cli.AddNamePrefixFlag(fs.FlagSet)
	force := fs.Bool("force", false, "confirm breaking the lock")
	asked := fs.String("kind", "", "lock kind")
	names, err := fs.ParseArgs(io, args)
	if err != nil {
		return err
	}
	if len(names) != 1 {
		return cli.Usagef("unlock", "want exactly one LOCK, got %d", len(names))
	}
	name := *prefix + names[0] // the key: what a prefixing NameMapper maps it to
	if err := keys.Check(name); err != nil {
		return cli.Usagef("unlock", "%v", err)
	}
	if *asked != "" && !slices.Contains(kinds.Locks, *asked) {
		return cli.Usagef("unlock", "unknown --kind %q (want %s)", *asked, strings.Join(kinds.Locks, ", "))
	}
	if !*force {
		return exit.Errorf(exit.Usage, "unlock: refusing to unlock %q without --force: unlocking deletes the lock whoever holds it, "+
			"so its holder goes on working as if it held the lock while the next waiter takes it too. "+
			"Use it only when the holder is known to be dead; 'interlock inspect %s' shows who holds it", name, name)
	}
	c, err := redisconn.Connect(redis.URLs)
	if err != nil {
		return err
	}
	defer c.Close()
	f, err := inspect.Probe(ctx, c.Redis, name)
	if err != nil {
		return exit.Failed(fmt.Sprintf("unlock %q", name), err)
	}
	kind, err := unlockKind(f, *asked)
	if err != nil {
		return err
	}
	// Deleting is only for a key shaped as kind's lock: never an
	// application's data under the same name (ForceUnlock would delete
	// whatever is there, as Redisson's does).
	if err := inspect.Fits(f, kind); err != nil {
		return exit.Errorf(exit.Usage, "unlock: %v; it was not deleted (see 'interlock inspect %s')", err, name)
	}
	deleted, err := forceUnlock(ctx, c.Client, kind, name)
	if err != nil {
		return exit.Failed(fmt.Sprintf("unlock %q", name), err)
	}
	if deleted {
		fmt.Fprintf(io.Out, "%s: unlocked (forced, %s)\n", name, kind)
		return nil
	}
	// Nothing deleted: the lock was free, or it is not locked as kind
	// (a read/write lock in the other mode).
	n, err := c.Redis.Do(ctx, c.Redis.B().Exists().Key(name).Build()).AsInt64()
	if err != nil {
		return exit.Failed(fmt.Sprintf("unlock %q", name), err)
	}
	if n == 1 {
		return exit.Errorf(exit.Failure, "unlock: %q is still locked: it is not locked as a %s lock (see 'interlock inspect %s'); nothing was deleted",
			name, kind, name)
	}
	fmt.Fprintf(io.Out, "%s: was not locked\n", name)
	return nil
}

// unlockKind chooses the ForceUnlock for the lock the facts show: the
// kind asked for with --kind, unless it contradicts what Redis holds, or
// else the kind found there (a read/write lock's mode tells read from
// write). Whether the key is a lock of that kind at all is Fits's to say.
func unlockKind(f *inspect.Facts, asked string) (string, error) {
	detected := inspect.DetectKind(f)
	refuse := func(want string) error {
		return exit.Errorf(exit.Usage, "unlock: %q is a %s lock, not a %s lock; use %s", f.Name, detected, asked, want)
	}
	switch detected {
	case kinds.ReadWrite:
		switch mode := f.Fields["mode"]; {
		case asked == kinds.Read || asked == kinds.Write:
			return asked, nil
		case asked != "":
			return "", refuse("--kind read or --kind write")
		case mode == "read" || mode == "write":
			return mode, nil
		default:
			return "", exit.Errorf(exit.Usage, "unlock: %q is a read/write lock in mode %q; say --kind read or --kind write", f.Name, mode)
		}
	case kinds.Fair:
		// The other kinds' unlock would not wake the head of the queue.
		if asked != "" && asked != kinds.Fair {
			return "", refuse("--kind fair, or no --kind")
		}
		return kinds.Fair, nil
	case kinds.Fenced, kinds.Reentrant:
		if asked == kinds.Read || asked == kinds.Write {
			return "", refuse("--kind " + detected + ", or no --kind")
		}
	}
	switch {
	case asked != "":
		return asked, nil
	case detected == kinds.None, detected == kinds.Unknown, detected == kinds.RateLimit:
		// No lock: Fits says what is there instead.
		return kinds.Reentrant, nil
	}
	return detected, nil
}

// forceUnlock deletes lock name with the ForceUnlock of kind (one of
// kinds.Locks) and reports whether there was a lock to delete.
func forceUnlock(ctx context.Context, c *interlock.Client, kind, name string) (bool, error) {
	m, err := kinds.NewLock(c, kind, name)
	if err != nil {
		return false, err
	}
	return m.ForceUnlock(ctx)
}
