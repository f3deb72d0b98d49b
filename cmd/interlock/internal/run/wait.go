package run

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/inspect"
	"github.com/interlock-go/interlock/cmd/interlock/internal/kinds"
	"github.com/interlock-go/interlock/cmd/interlock/internal/waitnote"
)

// keys returns the Redis keys of cfg's locks (or semaphore): the names
// under --name-prefix.
func (cfg *runConfig) keys() []string {
	keys := make([]string, len(cfg.locks))
	for i, name := range cfg.locks {
		keys[i] = cfg.prefix + name
	}
	return keys
}

// hint is the --kind of the inspect command that shows cfg's keys.
func (cfg *runConfig) hint() string {
	if kinds.IsSemaphore(cfg.kind) {
		return cfg.kind
	}
	return ""
}

// look is the inspect command that shows cfg's keys.
func (cfg *runConfig) look() string {
	return inspect.CommandLine(cfg.redis, cfg.hint(), cfg.keys()...)
}

// checkKeys refuses, before anything is changed, keys that hold what
// cfg.kind cannot work on: another type of data, a hash that is no lock,
// a lock of another kind, a counter that is no integer. The kind's own
// calls may answer so only after a change, or not at all (a foreign hash
// looks like a lock held forever).
func (cfg *runConfig) checkKeys(ctx context.Context, rc rueidis.Client) error {
	for _, key := range cfg.keys() {
		if err := inspect.Check(ctx, rc, key, cfg.kind); err != nil {
			return inspect.Refusal("run", err, inspect.CommandLine(cfg.redis, cfg.hint(), key))
		}
	}
	return nil
}

// waitNote returns what run says once it has waited waitnote.After: what
// it waits for, as Redis shows it now, and how to look at it. self is the
// owner string of run's own holds ("<client id>:<pid>"), which a multilock
// keeps while it waits for its other members.
func (cfg *runConfig) waitNote(rc rueidis.Client, self string) func(context.Context) string {
	return func(ctx context.Context) string {
		var states []string
		for _, key := range cfg.keys() {
			f, err := inspect.Probe(ctx, rc, key)
			if err != nil {
				return "" // the wait itself reports a Redis that fails
			}
			if s := cfg.state(f, self); s != "" {
				states = append(states, s)
			}
		}
		if len(states) == 0 {
			states = []string{"it was just released"}
		}
		return fmt.Sprintf("still waiting for %s after %v: %s; '%s' shows more",
			cfg.describeLock(), waitnote.After, strings.Join(states, "; "), cfg.look())
	}
}

// state says why the key of the facts f keeps run waiting, or "" when it
// does not look busy, or run holds it.
func (cfg *runConfig) state(f *inspect.Facts, self string) string {
	r := inspect.Decode(f, cfg.hint())
	subject := "it"
	if len(cfg.locks) > 1 {
		subject = strconv.Quote(strings.TrimPrefix(r.Name, cfg.prefix))
	}
	switch {
	case kinds.IsSemaphore(cfg.kind) && f.KeyType == "none" && len(r.Acquired) == 0:
		setUp := []string{"interlock", "semaphore", "init"}
		if a := cfg.redis.Arg(); a != "" {
			setUp = append(setUp, a)
		}
		setUp = append(setUp, cli.ShellQuote(r.Name), "N")
		return fmt.Sprintf("%s is not set up, so no permit is free until '%s' or a release provides some",
			subject, strings.Join(setUp, " "))
	case cfg.kind == kinds.RateLimit && r.RateLimit != nil && r.RateLimit.Overall != nil:
		return fmt.Sprintf("%d free, %d wanted, %d taken in the last %v", r.RateLimit.Overall.Free, cfg.permits,
			r.RateLimit.Overall.Taken, time.Duration(r.RateLimit.IntervalMs)*time.Millisecond)
	case kinds.IsSemaphore(cfg.kind) && r.Permits != nil:
		s := fmt.Sprintf("%d free, %d wanted", *r.Permits, cfg.permits)
		if cfg.kind == kinds.Expirable {
			s += fmt.Sprintf(", %d acquired", len(r.Acquired))
		}
		return s
	case r.Locked:
		others := 0
		for _, h := range r.Holders {
			if strings.TrimSuffix(h.Field, ":write") != self {
				others++
			}
		}
		switch {
		case others == 0 && len(r.Holders) > 0:
			return "" // run's own
		case others <= 1:
			return fmt.Sprintf("%s is held by another owner (TTL %s)", subject, inspect.FormatTTL(r.TTL()))
		}
		return fmt.Sprintf("%s is held by %d other owners (TTL %s)", subject, others, inspect.FormatTTL(r.TTL()))
	case len(r.Queue) > 0:
		return fmt.Sprintf("%s is free, with %s queued", subject, cli.Plural(len(r.Queue), "waiter"))
	}
	return ""
}
