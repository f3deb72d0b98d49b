// Package ratelimitcmd is "interlock ratelimit": it sets a Redisson rate
// limiter's rate, or takes permits from it (run --kind ratelimit takes
// them for a command).
package ratelimitcmd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/cmd/interlock/internal/inspect"
	"github.com/interlock-go/interlock/cmd/interlock/internal/kinds"
	"github.com/interlock-go/interlock/cmd/interlock/internal/proc"
	"github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"
	"github.com/interlock-go/interlock/cmd/interlock/internal/waitnote"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/ratelimit"
)

// Command is "interlock ratelimit set NAME RATE INTERVAL" and "ratelimit
// acquire NAME": RRateLimiter's trySetRate or setRate, and acquire or
// tryAcquire.
var Command = cli.Command{Name: "ratelimit", Usage: usage, Run: run}

// run is Command's Run.
func run(ctx context.Context, io cli.Stdio, args []string) error {
	fs := cli.NewFlagSet("ratelimit", usage)
	redis := redisconn.AddFlag(fs.FlagSet, io.Getenv)
	prefix := cli.AddNamePrefixFlag(fs.FlagSet)
	perClient := fs.Bool("per-client", false, "PER_CLIENT rate type")
	keepAlive := &cli.DurationFlag{}
	fs.Var(keepAlive, "keep-alive", "keys expire after this long unused")
	ifUnset := fs.Bool("if-unset", false, "only set a limiter that has no rate")
	permits := &cli.CountFlag{N: 1}
	fs.Var(permits, "permits", "permits acquire takes")
	wait := &cli.DurationFlag{Unset: "forever"}
	fs.Var(wait, "wait", "how long acquire waits")
	positional, err := fs.ParseArgs(io, args)
	if err != nil {
		return err
	}
	if len(positional) == 0 {
		return cli.Usagef("ratelimit", "want a subcommand: set or acquire")
	}
	sub, rest := positional[0], positional[1:]
	switch sub {
	case "set":
		if len(rest) != 3 {
			return cli.Usagef("ratelimit", "set: want NAME, RATE and INTERVAL, got %d arguments", len(rest))
		}
		if permits.Given || wait.Given {
			return cli.Usagef("ratelimit", "--permits and --wait are for acquire only")
		}
	case "acquire":
		if len(rest) != 1 {
			return cli.Usagef("ratelimit", "acquire: want NAME, got %d arguments", len(rest))
		}
		if *perClient || keepAlive.Given || *ifUnset {
			return cli.Usagef("ratelimit", "--per-client, --keep-alive and --if-unset are for set only")
		}
		if permits.N < 1 {
			return cli.Usagef("ratelimit", "--permits %d: at least 1 permit is needed", permits.N)
		}
	default:
		return cli.Usagef("ratelimit", "unknown subcommand %q (want set or acquire)", sub)
	}
	name := *prefix + rest[0] // the key: what a prefixing NameMapper maps it to
	if err := keys.Check(name); err != nil {
		return cli.Usagef("ratelimit", "%v", err)
	}
	var cfg ratelimit.Config
	if sub == "set" {
		if cfg, err = parseConfig(rest[1], rest[2], *perClient, *keepAlive); err != nil {
			return err
		}
	}

	c, err := redisconn.Connect(redis.URLs)
	if err != nil {
		return err
	}
	defer c.Close()
	look := inspect.CommandLine(redis, "", name)
	// Refused before anything changes: a key of other data, or a config
	// hash that is no rate limiter's.
	if err := inspect.Check(ctx, c.Redis, name, kinds.RateLimit); err != nil {
		return inspect.Refusal("ratelimit "+sub, err, look)
	}
	l := ratelimit.New(c.Client, name)
	if sub == "set" {
		return set(ctx, io, l, cfg, *ifUnset)
	}
	return acquire(ctx, io, c, l, permits.N, *wait, look)
}

// parseConfig checks set's RATE and INTERVAL and its flags.
func parseConfig(rate, interval string, perClient bool, keepAlive cli.DurationFlag) (ratelimit.Config, error) {
	cfg := ratelimit.Config{Type: ratelimit.Overall}
	if perClient {
		cfg.Type = ratelimit.PerClient
	}
	var err error
	if cfg.Rate, err = strconv.ParseInt(rate, 10, 64); err != nil || cfg.Rate < 1 {
		return cfg, cli.Usagef("ratelimit", "set: RATE %q is not a positive integer", rate)
	}
	if cfg.Interval, err = time.ParseDuration(interval); err != nil {
		return cfg, cli.Usagef("ratelimit", "set: INTERVAL %q is not a duration (examples: 500ms, 10s, 2m)", interval)
	}
	if cfg.Interval < time.Millisecond || cfg.Interval%time.Millisecond != 0 {
		return cfg, cli.Usagef("ratelimit", "set: INTERVAL %v must be whole milliseconds, at least 1ms", cfg.Interval)
	}
	if keepAlive.Given {
		switch {
		case keepAlive.D%time.Millisecond != 0:
			return cfg, cli.Usagef("ratelimit", "set: --keep-alive %v must be whole milliseconds", keepAlive.D)
		case keepAlive.D < cfg.Interval:
			return cfg, cli.Usagef("ratelimit", "set: --keep-alive %v must be at least the interval %v", keepAlive.D, cfg.Interval)
		}
		cfg.KeepAlive = keepAlive.D
	}
	return cfg, nil
}

// describe says what a config is, as in "10 permits per 1s (OVERALL, no
// keep-alive)".
func describe(cfg ratelimit.Config) string {
	keep := "no keep-alive"
	if cfg.KeepAlive > 0 {
		keep = "keep-alive " + cfg.KeepAlive.String()
	}
	return fmt.Sprintf("%s per %v (%v, %s)", cli.Plural(int(cfg.Rate), "permit"), cfg.Interval, cfg.Type, keep)
}

// set makes the limiter's config cfg: a new one as trySetRate, an equal
// one is left alone (its window goes on), another one is replaced as
// setRate does, unless ifUnset.
func set(ctx context.Context, io cli.Stdio, l *ratelimit.Limiter, cfg ratelimit.Config, ifUnset bool) error {
	ok, err := l.TrySetRate(ctx, cfg)
	if err != nil {
		return exit.Failed("ratelimit set", err)
	}
	if ok {
		fmt.Fprintf(io.Out, "%s: set to %s\n", l.Name(), describe(cfg))
		return nil
	}
	old, err := l.Config(ctx)
	switch {
	case errors.Is(err, ratelimit.ErrNotSet):
		// Deleted or expired since: it has no rate, so setRate gives it one.
	case err != nil:
		return exit.Failed("ratelimit set", err)
	case old == cfg:
		fmt.Fprintf(io.Out, "%s: already set to %s; nothing changed\n", l.Name(), describe(cfg))
		return nil
	case ifUnset:
		return exit.Errorf(exit.Failure, "ratelimit set: %q is already set to %s; nothing changed (without --if-unset, set replaces it)",
			l.Name(), describe(old))
	}
	if err := l.SetRate(ctx, cfg); err != nil {
		return exit.Failed("ratelimit set", err)
	}
	if old.Rate == 0 {
		fmt.Fprintf(io.Out, "%s: set to %s\n", l.Name(), describe(cfg))
		return nil
	}
	fmt.Fprintf(io.Out, "%s: replaced %s with %s; the window starts afresh\n", l.Name(), describe(old), describe(cfg))
	return nil
}

// acquire takes n permits: waiting until it gets them, or for wait when
// it is set. SIGINT or SIGTERM ends the wait with 128+N.
func acquire(ctx context.Context, io cli.Stdio, c *redisconn.Conn, l *ratelimit.Limiter, n int, wait cli.DurationFlag, look string) error {
	if err := CheckAcquire(ctx, l, n, "--permits"); err != nil {
		return err
	}
	ictx, interrupted := proc.Interruptible(ctx)
	defer interrupted()
	start := time.Now()
	quiet := waitnote.Start(ictx, io.Err, waitnote.After, WaitNote(c, l.Name(), n, look))
	// One try first, so that "after" is said only of a wait, never of a
	// slow reply.
	ok, err := l.TryAcquire(ictx, n, 0)
	waited := err == nil && !ok
	if waited {
		rest := wait
		rest.D = max(0, wait.D-time.Since(start))
		ok, err = Take(ictx, l, n, rest)
	}
	quiet()
	if sig := interrupted(); sig != nil {
		return exit.Errorf(exit.Signal(sig), "%v while waiting for rate limiter %q", sig, l.Name())
	}
	switch {
	case err != nil:
		return exit.Failed("ratelimit acquire", err)
	case !ok:
		return exit.Errorf(exit.Busy, "rate limiter %q: %s not free within --wait %v", l.Name(), permitsWere(n), wait.D)
	}
	took := fmt.Sprintf("%s: took %s", l.Name(), cli.Plural(n, "permit"))
	if waited {
		took += " after " + time.Since(start).Round(time.Millisecond).String()
	}
	fmt.Fprintln(io.Out, took)
	return nil
}

// permitsWere says "1 permit was" or "N permits were".
func permitsWere(n int) string {
	if n == 1 {
		return "1 permit was"
	}
	return cli.Plural(n, "permit") + " were"
}

// Take takes n permits of l as --wait says: with wait not set, until it
// gets them or ctx ends; with wait set, within wait.D, reporting false
// when they come free only after that.
func Take(ctx context.Context, l *ratelimit.Limiter, n int, wait cli.DurationFlag) (bool, error) {
	if wait.Given {
		return l.TryAcquire(ctx, n, wait.D)
	}
	err := l.Acquire(ctx, n)
	return err == nil, err
}

// CheckAcquire reads the limiter's config and refuses, before anything
// changes, what an acquisition of n permits cannot do: a limiter that is
// not set (exit 1), more permits than the rate, or a PER_CLIENT limiter,
// whose permits would be counted for this one process alone (exit 64).
// flag names the option that gave n.
func CheckAcquire(ctx context.Context, l *ratelimit.Limiter, n int, flag string) error {
	cfg, err := l.Config(ctx)
	switch {
	case errors.Is(err, ratelimit.ErrNotSet):
		return exit.Errorf(exit.Failure, "rate limiter %q is not set: 'interlock ratelimit set' (or Redisson's trySetRate) sets its rate first", l.Name())
	case err != nil:
		return exit.Failed("rate limiter "+strconv.Quote(l.Name()), err)
	case cfg.Type == ratelimit.PerClient:
		return exit.Errorf(exit.Usage, "rate limiter %q is PER_CLIENT: each interlock process is a client of its own, "+
			"so its permits would limit nothing but itself; nothing was taken", l.Name())
	case int64(n) > cfg.Rate:
		return exit.Errorf(exit.Usage, "%s %d exceeds the rate of %q, %s: no acquisition can take more than the rate",
			flag, n, l.Name(), describe(cfg))
	}
	return nil
}

// WaitNote returns what an acquisition says once it has waited
// waitnote.After: the limiter's free permits, and how to look.
func WaitNote(c *redisconn.Conn, name string, n int, look string) func(context.Context) string {
	return func(ctx context.Context) string {
		f, err := inspect.Probe(ctx, c.Redis, name)
		if err != nil {
			return "" // the wait itself reports a Redis that fails
		}
		r := inspect.Decode(f, "")
		if r.RateLimit == nil || r.RateLimit.Overall == nil {
			return ""
		}
		w := r.RateLimit.Overall
		return fmt.Sprintf("still waiting for rate limiter %q after %v: %d free, %d wanted, %d taken in the last %v; '%s' shows more",
			name, waitnote.After, w.Free, n, w.Taken, time.Duration(r.RateLimit.IntervalMs)*time.Millisecond, look)
	}
}
