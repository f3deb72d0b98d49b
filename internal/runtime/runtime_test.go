package runtime_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/runtime"
	"github.com/interlock-go/interlock/rlock"
)

func TestWatchdogSettings(t *testing.T) {
	r := newRuntime(t, interlock.WithWatchdogTimeout(3*time.Second), interlock.WithLogger(slog.New(slog.DiscardHandler)))
	assert.Equal(t, 3*time.Second, r.Cfg.Watchdog)
	assert.Equal(t, time.Second, r.Renewal.Interval())
	assert.Equal(t, interlock.DefaultWatchdogTimeout, newRuntime(t).Cfg.Watchdog)
}

func TestSafeModeAndMaxHoldSettings(t *testing.T) {
	r := newRuntime(t)
	assert.Zero(t, r.Cfg.ReplicaAcks, "safe mode is off by default")
	assert.Zero(t, r.Cfg.ReplicaTimeout)
	assert.Zero(t, r.Cfg.MaxHold, "no max hold by default")

	r = newRuntime(t, interlock.WithReplicaAcks(2, 250*time.Millisecond), interlock.WithMaxHold(time.Minute))
	assert.Equal(t, 2, r.Cfg.ReplicaAcks)
	assert.Equal(t, 250*time.Millisecond, r.Cfg.ReplicaTimeout)
	assert.Equal(t, time.Minute, r.Cfg.MaxHold)
}

func TestPubSubMode(t *testing.T) {
	ctx := context.Background()
	for mode, want := range map[interlock.PubSubMode]string{
		interlock.PubSubAuto:    "PUBLISH", // a standalone server
		interlock.PubSubClassic: "PUBLISH",
		interlock.PubSubSharded: "SPUBLISH",
	} {
		cmd, err := newRuntime(t, interlock.WithPubSubMode(mode)).PublishCommand(ctx)
		if mode == interlock.PubSubSharded && !redistest.FeaturesAt(t, addr).ShardedPubSub() {
			assert.ErrorIs(t, err, interlock.ErrInvalid, "sharded mode on Redis 6")
			assert.ErrorIs(t, err, runtime.ErrNoShardedPubSub)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, want, cmd, mode)
	}
}

func TestAutoModeOnClusterIsSharded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	cl := redistest.Cluster(t)
	c, err := interlock.New(cl.Client(t))
	require.NoError(t, err)
	defer c.Close()
	sharded, err := runtime.Of(c).Sharded(context.Background())
	require.NoError(t, err)
	assert.Equal(t, redistest.FeaturesAt(t, cl.Addrs()[0]).ShardedPubSub(), sharded,
		"sharded pub/sub on a Redis 7 cluster, classic on Redis 6, as Redisson chooses")
}

// A caller never waits on another caller's probe past its own deadline:
// with the cluster frozen, the first caller's probe hangs, and the next
// caller's short deadline still ends its call at once.
func TestAutoModeProbeWaitsOnlyForItsOwnDeadline(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	cl := redistest.Cluster(t)
	c, err := interlock.New(cl.Client(t))
	require.NoError(t, err)
	defer c.Close()
	r := runtime.Of(c)

	for _, n := range cl.Nodes() {
		require.NoError(t, n.Pause())
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			for _, n := range cl.Nodes() {
				assert.NoError(t, n.Resume())
			}
		}
	}
	defer resume()
	first := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := r.Sharded(ctx)
		first <- err
	}()
	time.Sleep(200 * time.Millisecond) // the first caller's probe is in flight

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = r.Sharded(ctx)
	took := time.Since(start)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	// Latency, with headroom for a loaded machine: before, the caller
	// waited for the frozen probe, until the cluster was resumed below.
	assert.Less(t, took, 3*time.Second, "the second caller waited past its deadline")

	resume()
	require.NoError(t, <-first, "the first caller's probe answers once the cluster does")
	sharded, err := r.Sharded(ctx)
	require.NoError(t, err, "the answer is kept: no probe, whatever the caller's deadline")
	assert.Equal(t, redistest.FeaturesAt(t, cl.Addrs()[0]).ShardedPubSub(), sharded)
}

// Queued keys of many slots are deleted, by a DEL that spans slots on a
// standalone server, and one slot at a time behind an endpoint that
// refuses such a DEL; Close deletes the keys still queued.
func TestDeleteLater(t *testing.T) {
	t.Run("standalone", func(t *testing.T) { testDeleteLater(t, redistest.NewClient(t, addr), false) })
	t.Run("slotted", func(t *testing.T) { testDeleteLater(t, redistest.NewClient(t, redistest.SharedSlotted(t)), true) })
	t.Run("cluster", func(t *testing.T) {
		rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: redistest.SharedCluster(t)})
		require.NoError(t, err)
		t.Cleanup(rc.Close)
		testDeleteLater(t, rc, false)
	})
}

// On a cluster, a script takes along the queued keys of its own slot once
// enough of them wait, and only those.
func TestScriptTakesItsSlotsKeys(t *testing.T) {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: redistest.SharedCluster(t)})
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	cnt := &delCounting{Client: rc}
	c, err := interlock.New(cnt)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	r := runtime.Of(c)
	ctx := context.Background()
	mine := func(i int) string { return "{takes}:" + strings.Repeat("k", i+1) }
	other := func(i int) string { return "{other}:" + strings.Repeat("k", i+1) }
	l := rlock.New(c, "{takes}:lock")
	// A sweep may beat the script to the keys on a loaded machine: try again.
	require.Eventually(t, func() bool {
		for i := range 40 {
			for _, k := range []string{mine(i), other(i)} {
				require.NoError(t, rc.Do(ctx, rc.B().Set().Key(k).Value("1").Build()).Error())
				r.DeleteLater(k)
			}
		}
		require.NoError(t, l.Lock(ctx))
		require.NoError(t, l.Unlock(ctx))
		return cnt.rides.Load() > 0
	}, 10*time.Second, time.Millisecond)
	assert.Equal(t, cnt.rides.Load(), cnt.ridesIn(keys.Slot(mine(0))), "only the script's slot's keys go along")
	require.Eventually(t, func() bool {
		n, err := rc.Do(ctx, rc.B().Exists().Key(mine(0)).Key(mine(39)).Build()).AsInt64()
		require.NoError(t, err)
		m, err := rc.Do(ctx, rc.B().Exists().Key(other(0)).Key(other(39)).Build()).AsInt64()
		require.NoError(t, err)
		return n+m == 0
	}, 5*time.Second, time.Millisecond, "the other slot's keys go by the sweep")
}

// delCounting counts the DELs sent in a DoMulti whose keys span slots,
// and those of them the server refused; and the DELs that rode along with
// a script, by slot.
type delCounting struct {
	rueidis.Client
	spanning, refused, rides atomic.Int64
	mu                       sync.Mutex
	slots                    map[uint16]int64 // rides by slot
}

// ridesIn is how many of the DELs that rode with a script held keys of slot.
func (c *delCounting) ridesIn(slot uint16) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slots[slot]
}

func (c *delCounting) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	spans := make([]bool, len(cmds)) // read before rueidis recycles them
	withScript := false
	for _, cmd := range cmds {
		withScript = withScript || strings.HasPrefix(cmd.Commands()[0], "EVAL")
	}
	for i, cmd := range cmds {
		if args := cmd.Commands(); args[0] == "DEL" {
			if withScript {
				c.rides.Add(1)
				c.mu.Lock()
				if c.slots == nil {
					c.slots = map[uint16]int64{}
				}
				c.slots[keys.Slot(args[1])]++
				c.mu.Unlock()
			}
			for _, k := range args[2:] {
				spans[i] = spans[i] || keys.Slot(k) != keys.Slot(args[1])
			}
		}
	}
	res := c.Client.DoMulti(ctx, cmds...)
	for i, r := range res {
		if spans[i] {
			c.spanning.Add(1)
			if _, ok := rueidis.IsRedisErr(r.Error()); ok {
				c.refused.Add(1)
			}
		}
	}
	return res
}

func testDeleteLater(t *testing.T, client rueidis.Client, refuses bool) {
	rc := &delCounting{Client: client}
	cluster := client.Mode() == rueidis.ClientModeCluster
	c, err := interlock.New(rc)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	r := runtime.Of(c)
	ctx := context.Background()
	var keys []string
	for i := range 50 {
		k := "deletelater:" + t.Name() + ":" + string(rune('a'+i%26)) + strings.Repeat("x", i)
		keys = append(keys, k)
		require.NoError(t, rc.Do(ctx, rc.B().Set().Key(k).Value("1").Build()).Error())
		r.DeleteLater(k)
	}
	count := func() int64 {
		n := int64(0)
		for _, k := range keys { // one slot per EXISTS, for the slotted endpoint
			m, err := rc.Do(ctx, rc.B().Exists().Key(k).Build()).AsInt64()
			require.NoError(t, err)
			n += m
		}
		return n
	}
	require.Eventually(t, func() bool { return count() == 0 }, 5*time.Second, time.Millisecond)
	if cluster {
		assert.Zero(t, rc.spanning.Load(), "a DEL holds one slot's keys")
	} else {
		assert.Positive(t, rc.spanning.Load(), "a DEL spans slots until one is refused")
	}
	if refuses {
		assert.Equal(t, int64(1), rc.refused.Load(), "one refusal, then one slot per DEL")
	} else {
		assert.Zero(t, rc.refused.Load())
	}

	// Keys queued just before Close are deleted by Close.
	for _, k := range keys[:3] {
		require.NoError(t, rc.Do(ctx, rc.B().Set().Key(k).Value("1").Build()).Error())
		r.DeleteLater(k)
	}
	require.NoError(t, c.Close())
	assert.Zero(t, count())
}

// On a cluster, the first acquisition that could be given up on probes the
// client: with one connection per node, scripts are in call order from
// then on; with two, never.
func TestOrderedOnCluster(t *testing.T) {
	addrs := redistest.SharedCluster(t)
	for _, tc := range []struct {
		name      string
		multiplex int
		ordered   bool
	}{
		{"default", 0, true},
		{"two connections per node", 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: addrs, PipelineMultiplex: tc.multiplex})
			require.NoError(t, err)
			t.Cleanup(rc.Close)
			c, err := interlock.New(rc)
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			r := runtime.Of(c)
			assert.False(t, r.Ordered(), "not before the probe")
			if tc.ordered {
				require.Eventually(t, r.Ordered, 5*time.Second, time.Millisecond)
				return
			}
			require.NoError(t, c.Close()) // joins the probe
			assert.False(t, r.Ordered())
		})
	}
}

// waitPipes records the DoMultis that carry WAIT, and how many of their
// commands are marked for the shared pipeline.
type waitPipes struct {
	rueidis.Client
	waits, piped atomic.Int64
}

func (w *waitPipes) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	var wait bool
	var piped int64
	for _, cmd := range cmds {
		wait = wait || redistest.IsCommand(cmd, "WAIT")
		if cmd.IsPipe() {
			piped++
		}
	}
	if wait {
		w.waits.Add(1)
		w.piped.Add(piped)
	}
	return w.Client.DoMulti(ctx, cmds...)
}

// In safe mode a script goes with WAIT in a pipeline that rueidis sends on
// a dedicated connection only if nothing in it is marked for the shared
// pipeline, which WAIT would otherwise hold up for its timeout, the
// Client's other scripts (a refused acquisition's take-back) behind it.
func TestSafeModePipelineIsDedicated(t *testing.T) {
	rc := &waitPipes{Client: redistest.NewClient(t, addr)}
	c, err := interlock.New(rc, interlock.WithReplicaAcks(1, 20*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	m := rlock.New(c, "safemode:"+t.Name())
	require.ErrorIs(t, m.Lock(t.Context()), interlock.ErrReplication, "no replica acknowledges")
	assert.Positive(t, rc.waits.Load())
	assert.Zero(t, rc.piped.Load(), "commands marked for the shared pipeline in a pipeline with WAIT")
	n, err := rc.Do(t.Context(), rc.B().Exists().Key("safemode:"+t.Name()).Build()).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, n, "the refused acquisition is taken back")
}

// Dedicate dedicates a connection whose renewal rounds and latch sweeps
// go through delCounting's DoMulti (redistest.Aside).
func (c *delCounting) Dedicate() (rueidis.DedicatedClient, func()) {
	dc, release := c.Client.Dedicate()
	return redistest.Aside(dc, c.DoMulti), release
}

// Dedicate dedicates a connection whose renewal rounds and latch sweeps
// go through waitPipes's DoMulti (redistest.Aside).
func (w *waitPipes) Dedicate() (rueidis.DedicatedClient, func()) {
	dc, release := w.Client.Dedicate()
	return redistest.Aside(dc, w.DoMulti), release
}
