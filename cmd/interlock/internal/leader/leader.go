// Package leader is "interlock leader": it campaigns in an election and
// runs CMD only while it leads, ending CMD when leadership is lost, as
// "interlock run" ends CMD when its lock is lost.
package leader

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/cmd/interlock/internal/inspect"
	"github.com/interlock-go/interlock/cmd/interlock/internal/kinds"
	"github.com/interlock-go/interlock/cmd/interlock/internal/proc"
	"github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"
	"github.com/interlock-go/interlock/cmd/interlock/internal/run"
	"github.com/interlock-go/interlock/cmd/interlock/internal/waitnote"
	"github.com/interlock-go/interlock/election"
	"github.com/interlock-go/interlock/internal/keys"
)

// The variables CMD gets besides INTERLOCK_LOCK.
const (
	// envToken is the term's fencing token, as the issue names it.
	envToken = "INTERLOCK_FENCING_TOKEN"
	// envFenceToken is the same token under the name "interlock run
	// --kind fenced" gives it, so that a CMD written for one works under
	// the other.
	envFenceToken = "INTERLOCK_FENCE_TOKEN"
	// envValue is the value this leader campaigned with.
	envValue = "INTERLOCK_LEADER_VALUE"
)

// Command is "interlock leader".
var Command = cli.Command{Name: "leader", Usage: usage, Run: runLeader}

// config is what "interlock leader" was asked to do.
type config struct {
	redis    *redisconn.Flag
	name     string
	value    string
	prefix   string
	watchdog cli.DurationFlag
	grace    cli.DurationFlag
	argv     []string
}

// parse parses the flags, NAME, "--" and CMD; every check is made here,
// before anything is sent.
func parse(io cli.Stdio, args []string) (*config, error) {
	cfg := &config{watchdog: cli.DurationFlag{D: interlock.DefaultWatchdogTimeout}, grace: cli.DurationFlag{D: run.DefaultGrace}}
	fs := cli.NewFlagSet("leader", usage)
	cfg.redis = redisconn.AddFlag(fs.FlagSet, io.Getenv)
	prefix := cli.AddNamePrefixFlag(fs.FlagSet)
	fs.StringVar(&cfg.value, "value", defaultValue(), "the value Leader and Observe report for this leader")
	fs.Var(&cfg.watchdog, "watchdog-timeout", "watchdog lease")
	fs.Var(&cfg.grace, "grace", "time between SIGTERM and SIGKILL")

	positional, argv, err := fs.ParseCommand(io, args, "NAME")
	if err != nil {
		return nil, err
	}
	switch {
	case len(positional) > 1:
		return nil, cli.Usagef("leader", "one NAME only, got %d", len(positional))
	case cfg.watchdog.D < interlock.MinWatchdogTimeout:
		return nil, cli.Usagef("leader", "--watchdog-timeout %v: the minimum is %v", cfg.watchdog.D, interlock.MinWatchdogTimeout)
	case cfg.grace.D < 0:
		return nil, cli.Usagef("leader", "--grace %v: must not be negative", cfg.grace.D)
	}
	cfg.name, cfg.prefix, cfg.argv = positional[0], *prefix, argv
	if err := keys.Check(*prefix + cfg.name); err != nil {
		return nil, cli.Usagef("leader", "%v", err)
	}
	return cfg, nil
}

// defaultValue is --value's default: host:pid, which names this process.
func defaultValue() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return host + ":" + strconv.Itoa(os.Getpid())
}

// runLeader is Command's Run.
func runLeader(ctx context.Context, io cli.Stdio, args []string) error {
	cfg, err := parse(io, args)
	if err != nil {
		return err
	}
	// Catch the signals first, so that none kills interlock between
	// taking the lead and starting CMD.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, proc.Forwarded...)
	defer signal.Stop(sigs)

	c, err := redisconn.Connect(cfg.redis.URLs, interlock.WithWatchdogTimeout(cfg.watchdog.D),
		interlock.WithNameMapper(interlock.PrefixNames(cfg.prefix)))
	if err != nil {
		return err
	}
	defer c.Close()
	e := election.New(c.Client, cfg.name)
	what := fmt.Sprintf("leadership of election %q", cfg.name)

	cctx, stop := proc.CancelOnSignal(ctx, sigs)
	quiet := waitnote.Start(cctx, io.Err, waitnote.After, func(ctx context.Context) string { return waitingFor(ctx, e, cfg) })
	lead, err := e.Campaign(cctx, cfg.value)
	quiet()
	if got := stop(); got != nil {
		if err == nil {
			_ = kinds.Release(ctx, e.Resign) // else it expires by itself
		}
		return exit.Errorf(exit.Signal(got), "%v while campaigning in election %q", got, cfg.name)
	}
	if err != nil {
		return exit.Failed(fmt.Sprintf("cannot campaign in election %q", cfg.name), err)
	}
	token := strconv.FormatUint(lead.Token(), 10)
	lost, status := run.Supervise(ctx, io, lead.Context(), run.Job{
		Argv:  cfg.argv,
		Name:  cfg.name,
		What:  what,
		Env:   []string{envToken + "=" + token, envFenceToken + "=" + token, envValue + "=" + cfg.value},
		Grace: cfg.grace.D,
	}, sigs)
	err = kinds.Release(ctx, e.Resign)
	switch {
	case lost:
		return status // already exit.Lost
	case errors.Is(err, interlock.ErrNotHeld) || errors.Is(err, interlock.ErrLockLost):
		return exit.Errorf(exit.Lost, "%s was gone when CMD exited: it was lost while CMD ran", what)
	case err != nil:
		fmt.Fprintf(io.Err, "interlock: warning: cannot resign %s: %v; it ends by itself within %v\n", what, err, cfg.watchdog.D)
	}
	return status
}

// waitingFor says, for a campaign that lasts, who leads meanwhile (never
// an owner id: interlock inspect shows those).
func waitingFor(ctx context.Context, e *election.Election, cfg *config) string {
	look := inspect.CommandLine(cfg.redis, kinds.Fenced, cfg.prefix+cfg.name)
	ld, err := e.Leader(ctx)
	switch {
	case errors.Is(err, election.ErrNoLeader):
		return fmt.Sprintf("still waiting to lead election %q after %v: nobody leads (a leader's lock just ran out, or its release is on its way); '%s' shows more",
			cfg.name, waitnote.After, look)
	case err != nil:
		return ""
	case ld.Value == "":
		return fmt.Sprintf("still waiting to lead election %q after %v: term %d is led by a holder that records no value (a Java client?); '%s' shows it",
			cfg.name, waitnote.After, ld.Token, look)
	}
	return fmt.Sprintf("still waiting to lead election %q after %v: term %d is led by %q; '%s' shows its lock",
		cfg.name, waitnote.After, ld.Token, cli.Short(ld.Value), look)
}
