// Package run is "interlock run", a distributed flock(1): it takes a lock
// (or several, as one multilock, or a semaphore's permits), runs CMD while
// it holds them, and ends CMD when the hold is lost.
package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/cmd/interlock/internal/kinds"
	"github.com/interlock-go/interlock/cmd/interlock/internal/proc"
	"github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"
	"github.com/interlock-go/interlock/cmd/interlock/internal/waitnote"
)

// Defaults of run's flags.
const (
	defaultGrace = 10 * time.Second
	// maxExpirablePermits bounds --permits of an expirable semaphore, whose
	// ids all travel in one script call and in CMD's environment.
	maxExpirablePermits = 1000
)

// runConfig is what "interlock run" was asked to do.
type runConfig struct {
	redis    *redisconn.Flag // --redis
	kind     string
	permits  int              // the permits a semaphore kind holds; 0 for locks
	wait     cli.DurationFlag // not set: wait until acquired or interrupted
	lease    time.Duration    // 0: watchdog
	watchdog time.Duration
	grace    time.Duration
	lock     string   // the name of the lock or semaphore; several: comma-joined
	locks    []string // every LOCK name, in the order given (several: a multilock)
	prefix   string   // --name-prefix
	argv     []string // CMD and its arguments
	what     string   // the hold in messages, when another command runs CMD (Supervise)
}

// parseRunArgs parses run's arguments: flags and LOCK, "--", then CMD.
// Every check is made here, before anything is sent.
func parseRunArgs(io cli.Stdio, args []string) (*runConfig, error) {
	cfg := &runConfig{wait: cli.DurationFlag{Unset: "forever"}}
	fs := cli.NewFlagSet("run", usage)
	redis := redisconn.AddFlag(fs.FlagSet, io.Getenv)
	prefix := cli.AddNamePrefixFlag(fs.FlagSet)
	fs.StringVar(&cfg.kind, "kind", kinds.Reentrant, "lock kind")
	permits := &cli.CountFlag{N: 1}
	fs.Var(permits, "permits", "permits a semaphore kind holds")
	fs.Var(&cfg.wait, "wait", "how long to wait for a busy lock")
	lease := &cli.DurationFlag{}
	fs.Var(lease, "lease", "fixed lease instead of the watchdog")
	watchdog := &cli.DurationFlag{D: interlock.DefaultWatchdogTimeout}
	fs.Var(watchdog, "watchdog-timeout", "watchdog lease")
	grace := &cli.DurationFlag{D: defaultGrace}
	fs.Var(grace, "grace", "time between SIGTERM and SIGKILL")

	positional, argv, err := fs.ParseCommand(io, args, "LOCK")
	if err != nil {
		return nil, err
	}
	if err := checkKind(cfg.kind); err != nil {
		return nil, err
	}
	cfg.redis, cfg.prefix, cfg.argv = redis, *prefix, argv
	cfg.lease, cfg.watchdog, cfg.grace = lease.D, watchdog.D, grace.D
	if err := checkNames(cfg, positional); err != nil {
		return nil, err
	}
	if cfg.lease > 0 && cfg.lease < time.Millisecond {
		return nil, cli.Usagef("run", "--lease %v: a lease must be at least 1ms", cfg.lease)
	}
	if err := checkPermits(cfg, permits, lease.Given); err != nil {
		return nil, err
	}
	if cfg.kind == kinds.RateLimit {
		for _, f := range []struct {
			name  string
			given bool
		}{{"--lease", lease.Given}, {"--watchdog-timeout", watchdog.Given}, {"--grace", grace.Given}} {
			if f.given {
				return nil, cli.Usagef("run", "%s is not for --kind %s: a rate limiter's permits are taken, not held, "+
					"so nothing renews, expires or loses them while CMD runs", f.name, kinds.RateLimit)
			}
		}
	}
	if cfg.watchdog < interlock.MinWatchdogTimeout {
		return nil, cli.Usagef("run", "--watchdog-timeout %v: the minimum is %v", cfg.watchdog, interlock.MinWatchdogTimeout)
	}
	return cfg, nil
}

// checkKind accepts the kinds run knows.
func checkKind(kind string) error {
	if slices.Contains(runKinds, kind) {
		return nil
	}
	return cli.Usagef("run", "unknown --kind %q (want %s)", kind, strings.Join(runKinds, ", "))
}

// checkPermits checks --permits against the kind and sets cfg.permits,
// and refuses --lease for an RSemaphore, whose permits have none.
func checkPermits(cfg *runConfig, permits *cli.CountFlag, leaseSet bool) error {
	switch {
	case !takesPermits(cfg.kind):
		if permits.Given {
			return cli.Usagef("run", "--permits is for --kind %s, %s and %s, not for a %s lock", kinds.Semaphore, kinds.Expirable,
				kinds.RateLimit, cfg.kind)
		}
		return nil
	case permits.N < 1:
		return cli.Usagef("run", "--permits %d: at least 1 permit is needed", permits.N)
	case cfg.kind == kinds.Expirable && permits.N > maxExpirablePermits:
		return cli.Usagef("run", "--permits %d: at most %d expirable permits can be held at once", permits.N, maxExpirablePermits)
	case cfg.kind == kinds.Semaphore && leaseSet:
		return cli.Usagef("run", "--lease is not for --kind %s: its permits have no lease (use --kind %s)", kinds.Semaphore, kinds.Expirable)
	}
	cfg.permits = permits.N
	return nil
}

// takesPermits reports whether kind takes --permits: a semaphore or a rate
// limiter.
func takesPermits(kind string) bool {
	return kinds.IsSemaphore(kind) || kind == kinds.RateLimit
}

// Command is "interlock run": lock, run CMD under the lock, unlock.
var Command = cli.Command{Name: "run", Usage: usage, Run: run}

// run is Command's Run.
func run(ctx context.Context, io cli.Stdio, args []string) error {
	cfg, err := parseRunArgs(io, args)
	if err != nil {
		return err
	}
	// Catch the signals before anything else, so that none of them kills
	// interlock between taking the lock and starting CMD.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, proc.Forwarded...)
	defer signal.Stop(sigs)

	c, err := redisconn.Connect(cfg.redis.URLs, interlock.WithWatchdogTimeout(cfg.watchdog),
		interlock.WithNameMapper(interlock.PrefixNames(cfg.prefix)))
	if err != nil {
		return err
	}
	defer c.Close()
	// The owner id is the pid, so that "interlock inspect" tells which
	// process on the client's host holds the lock.
	ctx = interlock.WithOwner(ctx, int64(os.Getpid()))
	l, err := newRunLocker(c.Client, cfg)
	if err != nil {
		return exit.WithCode(exit.Usage, err)
	}
	if err := acquire(ctx, io, c, l, cfg, sigs); err != nil {
		return err
	}
	lost, status := supervise(ctx, io, l, cfg, sigs)
	return release(ctx, io, l, cfg, lost, status)
}

// acquire takes the lock as cfg says, after checking that its keys hold
// what cfg.kind works on. A wait that lasts says once on io.Err what it
// waits for. A signal from sigs abandons the wait and ends interlock with
// 128+signal; should the lock have been taken at that moment, it is
// released first.
func acquire(ctx context.Context, io cli.Stdio, c *redisconn.Conn, l locker, cfg *runConfig, sigs <-chan os.Signal) error {
	actx, stop := proc.CancelOnSignal(ctx, sigs)
	refused := cfg.checkKeys(actx, c.Redis)
	var (
		ok  bool
		err error
	)
	if refused == nil {
		self := c.Client.ID() + ":" + strconv.Itoa(os.Getpid())
		quiet := waitnote.Start(actx, io.Err, waitnote.After, cfg.waitNote(c.Redis, self))
		ok, err = l.acquire(actx, cfg.wait, cfg.lease)
		quiet()
	}
	if got := stop(); got != nil {
		if ok {
			_ = kinds.Release(ctx, l.unlock) // else it expires by itself
		}
		return exit.Errorf(exit.Signal(got), "%v while waiting for %s", got, cfg.describeLock())
	}
	switch {
	case refused != nil:
		return refused
	case err != nil:
		if _, ok := errors.AsType[*exit.Error](err); ok {
			return err // a refusal that says why: a rate limiter not set, say
		}
		return exit.Failed("cannot take "+cfg.describeLock(), err)
	case !ok && takesPermits(cfg.kind):
		return exit.Errorf(exit.Busy, "%s is busy: %s not free within --wait %v", cfg.describeLock(), cfg.permitsWere(), cfg.wait.D)
	case !ok && len(cfg.locks) > 1:
		return exit.Errorf(exit.Busy, "%s is busy: another owner still held one of them after --wait %v", cfg.describeLock(), cfg.wait.D)
	case !ok:
		return exit.Errorf(exit.Busy, "%s is busy: another owner still held it after --wait %v", cfg.describeLock(), cfg.wait.D)
	}
	return nil
}

// describeLock names the lock for messages: `lock "L"`, or with the kind
// when it is not the default, as in `write lock "L"`, or the semaphore, as
// in `semaphore "S"`.
func (cfg *runConfig) describeLock() string {
	if cfg.what != "" {
		return cfg.what
	}
	if len(cfg.locks) > 1 {
		return cfg.describeMulti()
	}
	switch cfg.kind {
	case kinds.Reentrant:
		return fmt.Sprintf("lock %q", cfg.lock)
	case kinds.Semaphore:
		return fmt.Sprintf("semaphore %q", cfg.lock)
	case kinds.Expirable:
		return fmt.Sprintf("expirable semaphore %q", cfg.lock)
	case kinds.RateLimit:
		return fmt.Sprintf("rate limiter %q", cfg.lock)
	}
	return fmt.Sprintf("%s lock %q", cfg.kind, cfg.lock)
}

// permitsWere says how many permits cfg holds, as the subject of "were":
// "1 permit was", "2 permits were".
func (cfg *runConfig) permitsWere() string {
	if cfg.permits == 1 {
		return "1 permit was"
	}
	return cli.Plural(cfg.permits, "permit") + " were"
}

// release unlocks after CMD exited and decides the exit: CMD's status, or
// exit.Lost when the lock was lost while CMD ran, or found gone at unlock.
func release(ctx context.Context, io cli.Stdio, l locker, cfg *runConfig, lost bool, status error) error {
	err := kinds.Release(ctx, l.unlock)
	switch {
	case lost:
		return status // already exit.Lost
	case errors.Is(err, interlock.ErrNotHeld) && cfg.kind == kinds.Expirable:
		return exit.Errorf(exit.Lost, "a permit of %s was gone when CMD exited: its lease ran out, or it was released or deleted, "+
			"while CMD ran", cfg.describeLock())
	case errors.Is(err, interlock.ErrNotHeld) && len(cfg.locks) > 1:
		return exit.Errorf(exit.Lost, "%s: %s gone when CMD exited: expired or force-unlocked while CMD ran",
			cfg.describeLock(), goneLocks(err))
	case errors.Is(err, interlock.ErrNotHeld):
		return exit.Errorf(exit.Lost, "lock %q was gone when CMD exited: it expired or was force-unlocked while CMD ran", cfg.lock)
	case err != nil && cfg.kind == kinds.Semaphore:
		fmt.Fprintf(io.Err, "interlock: warning: cannot release %s of %s: %v; if they were not given back, "+
			"nothing gives them back (see 'interlock help semaphore')\n", cli.Plural(cfg.permits, "permit"), cfg.describeLock(), err)
	case err != nil && cfg.kind == kinds.Expirable:
		fmt.Fprintf(io.Err, "interlock: warning: cannot release the permits of %s: %v; they come back by themselves within %v\n",
			cfg.describeLock(), err, holdLease(cfg))
	case err != nil && len(cfg.locks) > 1:
		fmt.Fprintf(io.Err, "interlock: warning: cannot unlock every lock of %s: %s; they expire by themselves within %v\n",
			cfg.describeLock(), strings.ReplaceAll(err.Error(), "\n", "; "), holdLease(cfg))
	case err != nil:
		fmt.Fprintf(io.Err, "interlock: warning: cannot unlock %q: %v; it expires by itself within %v\n", cfg.lock, err, holdLease(cfg))
	}
	return status
}

// holdLease is the longest a hold of cfg survives without renewal.
func holdLease(cfg *runConfig) time.Duration {
	if cfg.lease > 0 {
		return cfg.lease
	}
	return cfg.watchdog
}
