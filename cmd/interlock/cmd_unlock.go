package main

import (
	"context"
	"fmt"

	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/rlock"
)

// unlockCmd is "interlock unlock --force LOCK": rlock's ForceUnlock.
func unlockCmd(ctx context.Context, io stdio, args []string) error {
	fs := newFlagSet("unlock")
	redis := addRedisFlag(fs, io.getenv)
	force := fs.Bool("force", false, "confirm breaking the lock")
	names, err := parseFlags(fs, io, args)
	if err != nil {
		return err
	}
	if len(names) != 1 {
		return usageErrorf("unlock", "want exactly one LOCK, got %d", len(names))
	}
	name := names[0]
	if err := keys.Check(name); err != nil {
		return usageErrorf("unlock", "%v", err)
	}
	if !*force {
		return failf(exitUsage, "unlock: refusing to unlock %q without --force: unlocking deletes the lock whoever holds it, "+
			"so its holder goes on working as if it held the lock while the next waiter takes it too. "+
			"Use it only when the holder is known to be dead; 'interlock inspect %s' shows who holds it", name, name)
	}
	c, err := connect(redis.urls)
	if err != nil {
		return err
	}
	defer c.Close()
	f, err := probe(ctx, c.rc, name)
	if err != nil {
		return failf(exitUnavailable, "unlock %q: %w", name, err)
	}
	switch kind := detectKind(f); kind {
	case kindReentrant, kindFenced, kindNone:
		// A fenced lock is released like a reentrant one (Redisson's
		// RedissonFencedLock inherits forceUnlock); its token stays.
	default:
		return failf(exitUsage, "unlock: %q is a %s lock; unlocking it is not supported yet", name, kind)
	}
	deleted, err := rlock.New(c.lc, name).ForceUnlock(ctx)
	if err != nil {
		return failf(exitUnavailable, "unlock %q: %w", name, err)
	}
	if deleted {
		fmt.Fprintf(io.out, "%s: unlocked (forced)\n", name)
	} else {
		fmt.Fprintf(io.out, "%s: was not locked\n", name)
	}
	return nil
}
