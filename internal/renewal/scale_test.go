package renewal_test

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/renewal"
)

// TestClusterBatching holds 10,000 watchdog locks on a 3-master cluster and
// checks that each tick is one DoMulti whose EVALSHA calls are no more than
// the sum over slots of ceil(locks in slot / batch size).
func TestClusterBatching(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster and holds 10,000 locks")
	}
	const (
		locks = 10000
		batch = 100
		// lease leaves a round of 7,500 calls (2.7 s under the race
		// detector beside a CPU hog) well inside it: renewed every 2 s.
		lease = 6 * time.Second
		// setupTTL is the keys' TTL until the first renewal: far longer
		// than a loaded machine takes to write them and start holding, so
		// that a TTL of at most the lease at the end says a renewal set it.
		setupTTL = time.Minute
	)
	cl := redistest.Cluster(t)
	rc := &counting{Client: cl.Client(t), ticks: make(chan time.Duration, 1)}
	ctx := context.Background()

	names := make([]string, locks)
	perSlot := map[uint16]int{}
	var setup rueidis.Commands
	for i := range names {
		names[i] = "orders:" + strconv.Itoa(i)
		perSlot[keys.Slot(names[i])]++
		setup = append(setup,
			rc.B().Hset().Key(names[i]).FieldValue().FieldValue("me:1", "1").Build(),
			rc.B().Pexpire().Key(names[i]).Milliseconds(setupTTL.Milliseconds()).Build())
	}
	for _, r := range rc.Client.DoMulti(ctx, setup...) {
		require.NoError(t, r.Error())
	}
	bound := 0
	for _, n := range perSlot {
		bound += (n + batch - 1) / batch
	}

	for _, n := range cl.Nodes() {
		nc := n.Client(t)
		require.NoError(t, nc.Do(ctx, nc.B().ScriptLoad().Script(task.Script.Source()).Build()).Error())
	}
	goroutinesBefore := runtime.NumGoroutine()
	var before runtime.MemStats
	runtime.GC()
	runtime.GC() // the second one empties sync.Pool victim caches
	runtime.ReadMemStats(&before)
	s := newScheduler(t, rc, renewal.Config{Lease: lease, BatchSize: batch})
	now := time.Now()
	for _, n := range names {
		require.NoError(t, s.Hold(n, "me:1", task, 0, now))
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	perLock := float64(after.HeapAlloc-before.HeapAlloc) / locks

	// With the script loaded on every node, each DoMulti is one round's
	// EVALSHA calls; rounds may overlap, so count them over three ticks.
	// rounds counts the DoMulti calls that returned; the servers are read
	// before it at the end, so that a round that ends while INFO is read
	// (slow on a loaded machine) is in both counts, and only the round in
	// flight at the end is in the servers' alone (the +1 below).
	took := <-rc.ticks
	calls, stats := rc.calls.Load(), evalshaCalls(t, cl)
	time.Sleep(3 * s.Interval())
	evalsha := evalshaCalls(t, cl) - stats
	rounds := rc.calls.Load() - calls
	assert.InDelta(t, 3, rounds, 1, "one DoMulti per tick")
	assert.LessOrEqual(t, rc.most.Load(), int64(bound), "EVALSHA calls in one DoMulti")
	assert.LessOrEqual(t, evalsha, (rounds+1)*int64(bound))
	goroutines := runtime.NumGoroutine() - goroutinesBefore

	t.Logf("%d locks in %d slots: at most %d EVALSHA calls in one tick (bound %d), %d in %d rounds, tick %v, %.0f B heap per held lock, %d goroutines added",
		locks, len(perSlot), rc.most.Load(), bound, evalsha, rounds, took.Round(time.Microsecond), perLock, goroutines)
	assert.Less(t, perLock, 1024.0)
	// Its goroutine and the rounds in flight (four at most), and the
	// connections' own, which rueidis starts as the rounds need them: a
	// handful, not one per held lock (7 here when idle; CI saw 11 once).
	assert.LessOrEqual(t, goroutines, 20, "goroutines added")
	for _, n := range names[:100] {
		p, err := rc.Do(ctx, rc.B().Pttl().Key(n).Build()).AsInt64()
		require.NoError(t, err)
		assert.Greater(t, p, int64(0))
		assert.LessOrEqual(t, p, lease.Milliseconds(), "renewed to the lease")
	}
	assert.Equal(t, locks, s.Len())
}

// evalshaCalls sums cmdstat_evalsha calls over the cluster's nodes.
func evalshaCalls(t *testing.T, cl *redistest.ClusterServers) int64 {
	t.Helper()
	var total int64
	for _, n := range cl.Nodes() {
		rc := n.Client(t)
		info, err := rc.Do(context.Background(), rc.B().Info().Section("commandstats").Build()).ToString()
		require.NoError(t, err)
		for line := range strings.SplitSeq(info, "\n") {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_evalsha:calls="); ok {
				v, _, _ := strings.Cut(rest, ",")
				c, err := strconv.ParseInt(v, 10, 64)
				require.NoError(t, err, fmt.Sprintf("parsing %q", line))
				total += c
			}
		}
	}
	return total
}
