// Package demo is "interlock demo": it tells, with real Redis, real
// processes and real timings, why a lock needs a watchdog, and with
// --chart draws the scenes' timeline as an SVG image. Its holder process
// is interlock itself, re-executed as the hidden HolderCommand.
package demo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/cmd/interlock/internal/proc"
	"github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redisproc"
)

// The timings of the story: short, so that the demo takes about 10
// seconds, yet long enough to read and to survive a busy machine.
const (
	// demoWatchdog is the watchdog timeout of every worker: a watchdog lock
	// lives this long after its last renewal, renewed every third of it.
	demoWatchdog = time.Second
	// demoLease is scene 1's fixed lease, shorter than A's job.
	demoLease = time.Second
	// demoLongJob is A's job in scene 1.
	demoLongJob = 2 * time.Second
	// demoSafeJob is A's job in scene 2, over twice the watchdog timeout.
	demoSafeJob = 2500 * time.Millisecond
	// demoShortJob is B's job.
	demoShortJob = 500 * time.Millisecond
	// demoSample is how often a scene shows the lock's TTL.
	demoSample = 500 * time.Millisecond
	// demoCrashAfter is how long C holds the lock before it is killed.
	demoCrashAfter = 1500 * time.Millisecond
	// demoPauseAfter is how long C holds the lock before it is paused.
	demoPauseAfter = 500 * time.Millisecond
	// demoWriteAfter is how long after its resumption C's job reaches its
	// write: time for its renewal to tell it about the loss.
	demoWriteAfter = 500 * time.Millisecond
	// demoSceneTimeout bounds a scene; it only matters when something is
	// badly wrong.
	demoSceneTimeout = 15 * time.Second
	// demoCleanupTimeout bounds the deletion of the demo's keys.
	demoCleanupTimeout = 2 * time.Second
	// demoOrder is the resource the workers fight over.
	demoOrder = "order-42"
)

// errStory marks a scene that did not turn out as the story says.
var errStory = errors.New("the story did not go as told")

// storyf returns an errStory error with details.
func storyf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errStory, fmt.Sprintf(format, args...))
}

// demo holds what the scenes share.
type demo struct {
	n    *narrator
	rc   rueidis.Client
	a, b *interlock.Client // workers A and B: two clients, as on two hosts
	urls []string          // the Redis, for holder processes
	exe  string            // this binary, re-executed as a holder

	stderr  io.Writer
	prefix  string         // unique per run: interlock-demo:<hex>
	keys    []string       // every key a scene used, deleted at the end
	holders []*holderProc  // every holder process started
	chart   *chartRecorder // the scenes' timeline, with --chart; nil without
}

// Command is "interlock demo".
var Command = cli.Command{Name: "demo", Usage: usage, Run: run}

// run is Command's Run.
func run(ctx context.Context, io cli.Stdio, args []string) error {
	fs := cli.NewFlagSet("demo", usage)
	redis := redisconn.AddFlag(fs.FlagSet, io.Getenv)
	chartFile := fs.String("chart", "", "write the scenes' timeline to `FILE`, an SVG image")
	rest, err := fs.ParseArgs(io, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return cli.Usagef("demo", "unexpected argument %q", rest[0])
	}
	exe, err := os.Executable()
	if err != nil {
		return exit.Errorf(exit.Unavailable, "demo: cannot find the interlock binary to start holder processes: %w", err)
	}
	ctx, interrupted := proc.Interruptible(ctx)
	defer interrupted()
	srv, err := demoRedis(ctx, io, redis)
	if err != nil {
		return interruptedOr(interrupted(), err)
	}
	defer srv.stop()
	c, err := redisconn.Connect(srv.urls, interlock.WithWatchdogTimeout(demoWatchdog))
	if err != nil {
		return interruptedOr(interrupted(), err)
	}
	defer c.Close()
	b, err := interlock.New(c.Redis, interlock.WithWatchdogTimeout(demoWatchdog))
	if err != nil {
		return err
	}
	defer b.Close()
	d := &demo{
		n: newNarrator(io.Out), rc: c.Redis, a: c.Client, b: b, urls: srv.urls, exe: exe,
		stderr: io.Err, prefix: "interlock-demo:" + randomHex(3),
	}
	if *chartFile != "" {
		d.chart = newChartRecorder(c.Redis)
	}
	d.intro(ctx, srv)
	err = d.play(ctx)
	removed := d.cleanup()
	if sig := interrupted(); sig != nil {
		return exit.Errorf(exit.Signal(sig), "demo: interrupted by %v; removed %s and %s", sig,
			cli.Plural(removed, "key"), cli.Plural(len(d.holders), "holder process"))
	}
	if *chartFile != "" {
		// Also after a scene that went wrong: its timeline shows how.
		if cerr := d.chart.writeChart(*chartFile); cerr != nil {
			return exit.WithCode(exit.Failure, fmt.Errorf("demo: writing the chart: %w", errors.Join(err, cerr)))
		}
		defer d.n.text(0, "Wrote the timeline of the scenes to %s.", *chartFile)
	}
	if err != nil {
		return exit.WithCode(exit.Failure, fmt.Errorf("demo: %w", err))
	}
	what := cli.Plural(removed, "key") + ", " + cli.Plural(len(d.holders), "holder process")
	if srv.srv != nil {
		what += " and the throwaway redis-server"
	}
	d.n.text(0, "\nAll four scenes ran as told in %s. Cleaned up %s.", secs(time.Since(d.n.begin)), what)
	return nil
}

// play runs the scenes in order.
func (d *demo) play(ctx context.Context) error {
	for _, scene := range []func(context.Context) error{d.sceneLease, d.sceneWatchdog, d.sceneCrash, d.scenePause} {
		sctx, cancel := context.WithTimeout(ctx, demoSceneTimeout)
		err := scene(sctx)
		d.chart.end(d.n)
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}

// intro says which Redis the demo runs on.
func (d *demo) intro(ctx context.Context, srv *demoServer) {
	where := strings.Join(srv.urls, ",")
	if srv.srv != nil {
		where = "a throwaway redis-server on " + srv.srv.Addr() + " (removed at the end)"
	}
	if info, err := d.rc.Do(ctx, d.rc.B().Info().Section("server").Build()).ToString(); err == nil {
		if v, ok := redisproc.InfoField(info, "redis_version"); ok {
			where += ", Redis " + v
		}
	}
	d.n.text(0, "interlock demo: why a lock needs a watchdog, with real Redis and real processes.\n"+
		"Redis: %s. Keys: %s:*\n"+
		"Every time below is measured as it happens; the watchdog timeout is %v.",
		where, d.prefix, demoWatchdog)
}

// names returns a scene's lock and ledger keys, records them for the
// clean-up, and begins the scene's timeline on the lock.
func (d *demo) names(scene string) (lock, ledger string) {
	lock = d.prefix + ":" + scene + ":" + demoOrder
	ledger = d.prefix + ":" + scene + ":ledger"
	d.keys = append(d.keys, lock, ledger)
	d.chart.begin(d.n, lock)
	return lock, ledger
}

// fencedNames returns the keys of a scene with the fenced lock: the lock,
// the ledger and the ledger's fence key, and records them for the clean-up
// with the lock's token counter, and begins the scene's timeline on the
// lock. The ledger and its fence share a hash tag, as a RedisFence on a
// cluster needs.
func (d *demo) fencedNames(scene string) (lock, ledger, fence string) {
	lock = d.prefix + ":" + scene + ":" + demoOrder
	ledger = "{" + d.prefix + ":" + scene + ":ledger}"
	fence = ledger + ":fence"
	d.keys = append(d.keys, lock, ledger, fence, keys.Prefix(keys.FenceTokenPrefix, lock))
	d.chart.begin(d.n, lock)
	return lock, ledger, fence
}

// cleanup kills the holder processes that are left and deletes the demo's
// keys, on a fresh context (the demo's may be cancelled). It returns how
// many keys it deleted.
func (d *demo) cleanup() int {
	for _, h := range d.holders {
		h.stop(true)
	}
	ctx, cancel := context.WithTimeout(context.Background(), demoCleanupTimeout)
	defer cancel()
	removed := 0
	for _, k := range slices.Compact(slices.Sorted(slices.Values(d.keys))) {
		// One DEL per key: on a cluster the keys live in different slots.
		if n, err := d.rc.Do(ctx, d.rc.B().Del().Key(k).Build()).AsInt64(); err == nil {
			removed += int(n)
		}
	}
	return removed
}

// interruptedOr returns an interruption by sig as the error, or else err.
func interruptedOr(sig os.Signal, err error) error {
	if sig != nil {
		return exit.Errorf(exit.Signal(sig), "demo: interrupted by %v", sig)
	}
	return err
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails on supported platforms
	return hex.EncodeToString(b)
}
