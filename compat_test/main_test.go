package compat_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
)

// standaloneAddr is the package's shared standalone redis-server.
var standaloneAddr string

// The shared cluster is started by the first test that needs it, so that
// running only standalone tests does not pay for it.
var shared struct {
	sync.Mutex
	started bool
	cluster *redistest.ClusterServers
	err     error
}

func TestMain(m *testing.M) {
	// A worker process (see workers_test.go) runs its part and exits
	// before any server is started or any test runs.
	if mode := os.Getenv(envWorker); mode != "" {
		os.Exit(runWorker(mode))
	}
	flag.Parse()
	setParallel()
	redistest.Main(m, func() (func(), error) {
		s, err := redistest.Start()
		if err != nil {
			return nil, err
		}
		standaloneAddr = s.Addr()
		return func() {
			removeCLI()
			shared.Lock()
			shared.cluster.Stop()
			shared.Unlock()
			s.Stop()
		}, nil
	},
		// rueidis' cluster client may still be finishing a topology
		// refresh for a moment after Close.
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"),
	)
}

// The package's tests are of two sorts. Most of them mostly wait: on JVMs,
// leases, watchdog timeouts and wake-ups. A dozen are heavy: tortures,
// transfer and exclusion runs, which keep both cores and a Redis busy for
// seconds (goroutines, worker processes and a JVM taking locks in a loop,
// with the race detector on). One after the other, as go test runs them by
// default, the package takes eight minutes; all at once, the heavy ones slow
// each other down and make everyone's waits late. So each test, once
// parallel, takes a slot for its run: one of waitSlots (parallel), or one
// of busySlots for a heavy one (parallelHeavy). Only the tests that do the
// work take one, not the parents that only run subtests, so that a parent
// never holds a slot its subtests wait for.
const (
	// waitParallel is how many of the waiting tests run at once: each is a
	// JVM or two (about a CPU-second to start, then mostly idle) and
	// goroutines that mostly sleep, so that more than the cores can run at
	// once; but a JVM's start-up is then what the others' waits compete with.
	waitParallel = 8
	// busyParallel is how many heavy tests run at once, beside them: two
	// keep the cores and the servers busy, and no more than two make the
	// others' waits late.
	busyParallel = 2
	// goParallel is the -test.parallel the package sets unless the command
	// line gives one: high enough that go test's own limit (GOMAXPROCS by
	// default) never holds a test back, the slots doing that instead.
	goParallel = 64
)

var (
	waitSlots = make(chan struct{}, waitParallel)
	busySlots = make(chan struct{}, busyParallel)
)

// parallel runs t in parallel with the package's other tests, in one of
// waitSlots, which it holds until t and its cleanups are done.
func parallel(t *testing.T) {
	t.Parallel()
	takeSlot(t, waitSlots)
}

// parallelHeavy is parallel for a heavy test, in one of busySlots.
func parallelHeavy(t *testing.T) {
	t.Parallel()
	takeSlot(t, busySlots)
}

func takeSlot(t *testing.T, slots chan struct{}) {
	slots <- struct{}{}
	t.Cleanup(func() { <-slots }) // the first cleanup registered: it runs last
}

// setParallel sets -test.parallel to goParallel unless the command line
// gave it.
func setParallel() {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := flag.Set("test.parallel", strconv.Itoa(goParallel)); err != nil {
			panic(err)
		}
	}
}

// sharedCluster returns the package's three-master cluster, starting it on
// first use. It skips or fails t as redistest.SkipOrFail does when the
// cluster cannot be started.
func sharedCluster(t *testing.T) *redistest.ClusterServers {
	t.Helper()
	shared.Lock()
	defer shared.Unlock()
	if !shared.started {
		shared.started = true
		shared.cluster, shared.err = redistest.StartCluster()
	}
	redistest.SkipOrFail(t, shared.err)
	return shared.cluster
}

// monitoredStandalone returns the address of a standalone server of t's
// own, for the golden tests: they read MONITOR, which shows every client's
// commands, and compare what it shows with the exact commands of their
// steps, so no other test may use their server. With such a server the
// test runs in parallel with the others. When REDIS_ADDR points the
// package at an existing server there is no other to be had, and the test
// stays serial: go test runs it while no other test runs.
func monitoredStandalone(t *testing.T) string {
	t.Helper()
	s := redistest.Standalone(t)
	if s.Addr() != standaloneAddr {
		parallel(t)
	}
	return s.Addr()
}

// monitoredCluster is monitoredStandalone for the cluster golden tests: a
// three-master cluster of t's own (a few seconds to form), and t runs in
// parallel with the others.
func monitoredCluster(t *testing.T) *redistest.ClusterServers {
	t.Helper()
	parallel(t)
	return redistest.Cluster(t)
}

// loadSlack is how much later than the protocol would have it a timer, a
// wake-up or a peer's reply may come on a loaded two-core machine running
// three test packages at once with the race detector (100-600ms were
// seen). Bounds on a latency add it; a bound that states a safety property
// (no overlap, mutual exclusion, FIFO order, a token that only rises)
// never does.
const loadSlack = time.Second

// waitFor polls cond, in the caller's goroutine, until it holds or timeout
// has passed, and reports whether it held. (testify's Eventually runs cond
// in goroutines of its own, which the conn helpers must not fail from, and
// may leave one running after the test.)
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
	return true
}

var nameSeq atomic.Int64

// unique returns base made unique to this process and call, so that tests
// never share keys, even on a server left over from an earlier run.
func unique(base string) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%d-%s", base, os.Getpid(), nameSeq.Add(1), hex.EncodeToString(b[:]))
}

// testCtx returns a context that ends after d or when t ends.
func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// newLockClient returns an interlock Client on rc, closed by t.Cleanup
// (before rc, which was registered earlier).
func newLockClient(t *testing.T, rc rueidis.Client, opts ...interlock.Option) *interlock.Client {
	t.Helper()
	c, err := interlock.New(rc, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}
