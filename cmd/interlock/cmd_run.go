package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
)

// Defaults of run's flags.
const (
	defaultGrace = 10 * time.Second
	// unlockTimeout bounds the unlock after CMD exited, and the unlock of a
	// lock acquired just as a signal arrived.
	unlockTimeout = 5 * time.Second
)

// runConfig is what "interlock run" was asked to do.
type runConfig struct {
	redis    []string
	kind     string
	wait     durationFlag  // not set: wait until acquired or interrupted
	lease    time.Duration // 0: watchdog
	watchdog time.Duration
	grace    time.Duration
	lock     string
	argv     []string // CMD and its arguments
}

// parseRunArgs parses run's arguments: flags and LOCK, "--", then CMD.
func parseRunArgs(io stdio, args []string) (*runConfig, error) {
	cfg := &runConfig{wait: durationFlag{unset: "forever"}}
	fs := newFlagSet("run")
	redis := addRedisFlag(fs, io.getenv)
	fs.StringVar(&cfg.kind, "kind", kindReentrant, "lock kind")
	fs.Var(&cfg.wait, "wait", "how long to wait for a busy lock")
	lease := &durationFlag{}
	fs.Var(lease, "lease", "fixed lease instead of the watchdog")
	watchdog := &durationFlag{d: interlock.DefaultWatchdogTimeout}
	fs.Var(watchdog, "watchdog-timeout", "watchdog lease")
	grace := &durationFlag{d: defaultGrace}
	fs.Var(grace, "grace", "time between SIGTERM and SIGKILL")

	head, argv, hasSep := args, []string(nil), false
	if i := slices.Index(args, "--"); i >= 0 {
		head, argv, hasSep = args[:i], args[i+1:], true
	}
	positional, err := parseFlags(fs, io, head)
	if err != nil {
		return nil, err
	}
	switch {
	case !hasSep:
		return nil, usageErrorf("run", "missing \"--\" between LOCK and CMD")
	case len(positional) != 1:
		return nil, usageErrorf("run", "want exactly one LOCK before \"--\", got %d arguments", len(positional))
	case len(argv) == 0:
		return nil, usageErrorf("run", "no CMD after \"--\"")
	}
	if err := checkKind(cfg.kind); err != nil {
		return nil, err
	}
	cfg.redis, cfg.lock, cfg.argv = redis.urls, positional[0], argv
	cfg.lease, cfg.watchdog, cfg.grace = lease.d, watchdog.d, grace.d
	if err := keys.Check(cfg.lock); err != nil {
		return nil, usageErrorf("run", "%v", err)
	}
	if cfg.lease > 0 && cfg.lease < time.Millisecond {
		return nil, usageErrorf("run", "--lease %v: a lease must be at least 1ms", cfg.lease)
	}
	if cfg.watchdog < interlock.MinWatchdogTimeout {
		return nil, usageErrorf("run", "--watchdog-timeout %v: the minimum is %v", cfg.watchdog, interlock.MinWatchdogTimeout)
	}
	return cfg, nil
}

// checkKind accepts the lock kinds run knows.
func checkKind(kind string) error {
	if slices.Contains(lockKinds, kind) {
		return nil
	}
	return usageErrorf("run", "unknown --kind %q (want %s)", kind, strings.Join(lockKinds, ", "))
}

// runCmd is "interlock run": lock, run CMD under the lock, unlock.
func runCmd(ctx context.Context, io stdio, args []string) error {
	cfg, err := parseRunArgs(io, args)
	if err != nil {
		return err
	}
	// Catch the signals before anything else, so that none of them kills
	// interlock between taking the lock and starting CMD.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwardedSignals...)
	defer signal.Stop(sigs)

	c, err := connect(cfg.redis, interlock.WithWatchdogTimeout(cfg.watchdog))
	if err != nil {
		return err
	}
	defer c.Close()
	// The owner id is the pid, so that "interlock inspect" tells which
	// process on the client's host holds the lock.
	ctx = interlock.WithOwner(ctx, int64(os.Getpid()))
	l, err := newLocker(c.lc, cfg.kind, cfg.lock)
	if err != nil {
		return withCode(exitUsage, err)
	}
	if err := acquire(ctx, l, cfg, sigs); err != nil {
		return err
	}
	lost, status := supervise(ctx, io, l, cfg, sigs)
	return release(ctx, io, l, cfg, lost, status)
}

// acquire takes the lock as cfg says. A signal from sigs abandons the wait
// and ends interlock with 128+signal; should the lock have been taken at
// that moment, it is released first.
func acquire(ctx context.Context, l locker, cfg *runConfig, sigs <-chan os.Signal) error {
	actx, cancel := context.WithCancel(ctx)
	var got os.Signal
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case got = <-sigs:
			cancel()
		case <-actx.Done():
		}
	}()
	ok, err := l.acquire(actx, cfg.wait, cfg.lease)
	cancel()
	<-done
	if got != nil {
		if ok {
			unlockQuietly(ctx, l.unlock)
		}
		return failf(signalExit(got), "%v while waiting for %s", got, cfg.describeLock())
	}
	switch {
	case err != nil:
		return failf(exitUnavailable, "cannot take %s: %w", cfg.describeLock(), err)
	case !ok:
		return failf(exitBusy, "%s is busy: another owner still held it after --wait %v", cfg.describeLock(), cfg.wait.d)
	}
	return nil
}

// describeLock names the lock for messages: `lock "L"`, or with the kind
// when it is not the default, as in `write lock "L"`.
func (cfg *runConfig) describeLock() string {
	if cfg.kind == kindReentrant {
		return fmt.Sprintf("lock %q", cfg.lock)
	}
	return fmt.Sprintf("%s lock %q", cfg.kind, cfg.lock)
}

// release unlocks after CMD exited and decides the exit: CMD's status, or
// exitLost when the lock was lost while CMD ran, or found gone at unlock.
func release(ctx context.Context, io stdio, l locker, cfg *runConfig, lost bool, status error) error {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unlockTimeout)
	defer cancel()
	err := l.unlock(uctx)
	switch {
	case lost:
		return status // already exitLost
	case errors.Is(err, interlock.ErrNotHeld):
		return failf(exitLost, "lock %q was gone when CMD exited: it expired or was force-unlocked while CMD ran", cfg.lock)
	case err != nil:
		fmt.Fprintf(io.err, "interlock: warning: cannot unlock %q: %v; it expires by itself within %v\n", cfg.lock, err, holdLease(cfg))
	}
	return status
}

// unlockQuietly releases a hold nobody will use, ignoring errors: the
// lock then expires by itself.
func unlockQuietly(ctx context.Context, unlock func(context.Context) error) {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unlockTimeout)
	defer cancel()
	_ = unlock(uctx)
}

// holdLease is the longest a hold of cfg survives without renewal.
func holdLease(cfg *runConfig) time.Duration {
	if cfg.lease > 0 {
		return cfg.lease
	}
	return cfg.watchdog
}
