package compat_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/keys"
)

// The sizes the exclusion test must run at: 2 processes x 8 goroutines x
// 500 acquisitions over 5 locks, 8,000 acquisitions in all.
const (
	exclProcs      = 2
	exclGoroutines = 8
	exclIterations = 500
	exclLocks      = 5
	exclTotal      = exclProcs * exclGoroutines * exclIterations
	// exclBudget is the wall time the run should stay under on the
	// project's two-core machines; exceeding it is logged, not failed.
	exclBudget = 60 * time.Second
)

// TestExclusionAcrossProcessesStandalone: two worker processes, each with
// its own rueidis client and interlock Client, contend for five locks on a
// standalone server.
func TestExclusionAcrossProcessesStandalone(t *testing.T) {
	parallelHeavy(t)
	testExclusion(t, []string{standaloneAddr})
}

// TestExclusionAcrossProcessesCluster is the same on the three-master
// cluster, with sharded pub/sub.
func TestExclusionAcrossProcessesCluster(t *testing.T) {
	parallelHeavy(t)
	testExclusion(t, sharedCluster(t).Addrs())
}

func testExclusion(t *testing.T, addrs []string) {
	run := unique("excl")
	names := make([]string, exclLocks)
	for i := range names {
		names[i] = run + ":" + strconv.Itoa(i)
	}
	names[exclLocks-1] = "{" + run + ":tagged}:x" // one name with its own hash tag
	ctls := make([]*conn, len(addrs))
	for i, a := range addrs {
		ctls[i] = dial(t, a)
	}
	// ctlFor returns a connection to the node that serves key.
	ctlFor := func(key string) *conn {
		if len(ctls) == 1 {
			return ctls[0]
		}
		for _, c := range ctls {
			if _, err := c.try("EXISTS", key); err == nil {
				return c
			}
		}
		t.Fatalf("no node serves %s", key)
		return nil
	}
	t.Cleanup(func() {
		for _, n := range names {
			ctlFor(n).try("DEL", gaugeKey(n), violationsKey(n), countKey(n))
		}
	})
	if len(addrs) > 1 {
		slots, nodes := map[uint16]bool{}, map[string]bool{}
		for _, n := range names {
			slots[keys.Slot(n)] = true
			nodes[ctlFor(n).addr] = true
		}
		t.Logf("%d locks in %d slots on %d of the %d masters", len(names), len(slots), len(nodes), len(addrs))
	}

	env := map[string]string{
		envAddrs:      strings.Join(addrs, ","),
		envNames:      strings.Join(names, ","),
		envGoroutines: strconv.Itoa(exclGoroutines),
		envIterations: strconv.Itoa(exclIterations),
	}
	workers := make([]*worker, exclProcs)
	for i := range workers {
		w, cleanup, err := startWorker(modeExclusion, env)
		require.NoError(t, err)
		t.Cleanup(cleanup)
		workers[i] = w
	}
	for _, w := range workers {
		l, err := w.line(time.Minute)
		require.NoError(t, err)
		require.Equal(t, "ready", l)
	}

	start := time.Now()
	for _, w := range workers {
		require.NoError(t, w.send("go"))
	}
	reported := 0
	for i, w := range workers {
		l, err := w.line(workerTimeout)
		require.NoError(t, err, "worker %d", i)
		var n, channels int
		_, err = fmt.Sscanf(l, "done %d %d", &n, &channels)
		require.NoError(t, err, "worker %d wrote %q", i, l)
		assert.Equal(t, exclGoroutines*exclIterations, n, "worker %d acquisitions", i)
		assert.Zero(t, channels, "worker %d: subscriptions still open in its pub/sub hub", i)
		reported += n
	}
	elapsed := time.Since(start)
	t.Logf("%d processes x %d goroutines x %d acquisitions over %d locks on %d node(s): %d acquisitions in %v, %.0f acquisitions/s",
		exclProcs, exclGoroutines, exclIterations, exclLocks, len(addrs), reported, elapsed.Round(time.Millisecond),
		float64(reported)/elapsed.Seconds())
	if elapsed > exclBudget {
		t.Logf("NOTE: slower than the %v budget", exclBudget)
	}

	// While both workers are still connected: every lock free, every gauge
	// back at 0, no violation, and no subscription left on the server.
	counted := int64(0)
	for _, n := range names {
		c := ctlFor(n)
		assert.Zero(t, c.int("EXISTS", n), "lock %s still exists", n)
		assert.Equal(t, "0", c.str("GET", gaugeKey(n)), "gauge of %s", n)
		assert.Equal(t, "", c.str("GET", violationsKey(n)), "violations on %s", n)
		cnt, err := strconv.ParseInt(c.str("GET", countKey(n)), 10, 64)
		require.NoError(t, err)
		counted += cnt
	}
	assert.Equal(t, int64(exclTotal), counted, "acquisitions counted in Redis")
	assert.Equal(t, exclTotal, reported, "acquisitions reported by the workers")
	pattern := "*" + run + "*"
	assert.True(t, waitFor(2*time.Second, func() bool {
		for _, c := range ctls {
			if len(c.strs("PUBSUB", "CHANNELS", pattern)) > 0 || len(c.strs("PUBSUB", "SHARDCHANNELS", pattern)) > 0 {
				return false
			}
		}
		return true
	}), "subscriptions left on the server while the workers are connected")

	for i, w := range workers {
		require.NoError(t, w.send("exit"))
		require.NoError(t, w.wait(30*time.Second), "worker %d", i)
	}

	// After both exited: no lock keys and no latches at all.
	for _, c := range ctls {
		var left []string
		for _, k := range c.scan(pattern) {
			if !strings.HasPrefix(k, "compat_") {
				left = append(left, k)
			}
		}
		assert.Empty(t, left, "lock keys left on %s", c.addr)
		assert.Empty(t, c.strs("PUBSUB", "CHANNELS", pattern), "channels on %s", c.addr)
		assert.Empty(t, c.strs("PUBSUB", "SHARDCHANNELS", pattern), "shard channels on %s", c.addr)
	}
}

// TestKill9WatchdogExpiry: a worker holds a lock with a 2s watchdog; after
// SIGKILL nothing renews it, and it must be gone within the watchdog
// timeout of the kill. Two seconds rather than less, so that the renewals
// (every 667ms) keep the lock while the worker runs on a loaded machine.
func TestKill9WatchdogExpiry(t *testing.T) {
	parallel(t)
	const (
		watchdog = 2 * time.Second
		// late is how much later than the watchdog timeout after the
		// kill the lock may still be seen: a renewal the worker sent just
		// before it, still on its way to the server.
		late = 200 * time.Millisecond
	)
	name := unique("kill9")
	w, cleanup, err := startWorker(modeHold, map[string]string{envAddrs: standaloneAddr, envNames: name,
		envWatchdog: watchdog.String()})
	require.NoError(t, err)
	t.Cleanup(cleanup)
	l, err := w.line(time.Minute)
	require.NoError(t, err)
	owner, ok := strings.CutPrefix(l, "ready ")
	require.True(t, ok, "worker wrote %q", l)
	require.Regexp(t, ownerRE, owner)

	ctl := dial(t, standaloneAddr)
	t.Cleanup(func() { ctl.try("DEL", name) })
	assert.Equal(t, map[string]string{owner: "1"}, ctl.hash(name))
	pttl := ctl.int("PTTL", name)
	assert.True(t, pttl > 0 && pttl <= watchdog.Milliseconds(), "PTTL %d after a lock with a %v watchdog", pttl, watchdog)

	// Outlive the lease once: the worker's watchdog must keep the lock.
	time.Sleep(watchdog + watchdog/2)
	require.Equal(t, map[string]string{owner: "1"}, ctl.hash(name), "the watchdog did not keep the lock for %v", watchdog+watchdog/2)
	pttl = ctl.int("PTTL", name)
	assert.True(t, pttl > 0 && pttl <= watchdog.Milliseconds(), "PTTL %d while renewed", pttl)

	// Poll until the lock is gone. What bounds the expiry is the last
	// poll that still found the lock, timed from when it was sent: the
	// lock was there at least until then. (The first poll that finds it
	// gone may come late on a loaded machine; it is only logged.)
	killed := time.Now()
	require.NoError(t, w.cmd.Process.Signal(os.Kill))
	var present, gone time.Duration
	for {
		sent := time.Now()
		if ctl.int("EXISTS", name) == 0 {
			gone = time.Since(killed)
			break
		}
		present = sent.Sub(killed)
		if time.Since(killed) > watchdog+10*time.Second {
			t.Fatalf("lock still present %v after SIGKILL (PTTL at kill %dms)", time.Since(killed), pttl)
		}
		time.Sleep(time.Millisecond)
	}
	err = w.wait(10 * time.Second)
	var exitErr *exec.ExitError
	require.True(t, errors.As(err, &exitErr), "worker exit: %v", err)
	assert.False(t, exitErr.Exited(), "the worker exited by itself instead of being killed")
	t.Logf("SIGKILLed holder with a %v watchdog: lock last seen %v and gone %v after the kill (PTTL %dms shortly before the kill)",
		watchdog, present.Round(time.Millisecond), gone.Round(time.Millisecond), pttl)
	assert.LessOrEqual(t, present, watchdog+late, "lock outlived its holder by more than its watchdog timeout")
}
