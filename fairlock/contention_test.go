package fairlock_test

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/runtime"
)

// TestNoLeaksUnderContention is Redisson's testPubSubNoLeak with a gauge:
// 16 goroutines take 4 fair locks 5,000 times in all, each waiter on a
// channel of its own. Nobody is ever inside a lock with someone else, and
// afterwards no subscription (local or on the server), no queue and no key
// is left.
func TestNoLeaksUnderContention(t *testing.T) {
	const (
		goroutines = 16
		locks      = 4
		cycles     = 5000
	)
	c, rc := newClient(t)
	ctx := redistest.Context(t)
	names := make([]string, locks)
	for i := range names {
		names[i] = lockName(t) + ":" + strconv.Itoa(i)
	}
	inside := make([]atomic.Int32, locks)
	var (
		next, violations, maxChannels atomic.Int64
		wg                            sync.WaitGroup
	)
	start := time.Now()
	for g := range goroutines {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(g), 7))
			for next.Add(1) <= cycles {
				i := rnd.IntN(locks)
				m := fairlock.New(c, names[i])
				if !assert.NoError(t, m.Lock(ctx)) {
					return
				}
				if inside[i].Add(1) != 1 {
					violations.Add(1)
				}
				if n := int64(c.Stats().Channels); n > maxChannels.Load() {
					maxChannels.Store(n)
				}
				if rnd.IntN(4) == 0 {
					time.Sleep(time.Duration(rnd.IntN(500)) * time.Microsecond)
				}
				inside[i].Add(-1)
				if !assert.NoError(t, m.Unlock(ctx)) {
					return
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	t.Logf("%d acquisitions of %d locks by %d goroutines in %v (%.0f/s); at most %d channels subscribed at once",
		cycles, locks, goroutines, took.Round(time.Millisecond), cycles/took.Seconds(), maxChannels.Load())
	assert.Zero(t, violations.Load(), "two owners inside one lock")
	assert.LessOrEqual(t, maxChannels.Load(), int64(goroutines-1), "one channel per waiting owner")
	nothingLeft(t, c, rc, lockName(t))
	assert.Zero(t, c.Stats().Holds)
}

// TestCluster runs the fair lock on a three-master cluster with sharded
// pub/sub: every key and channel of a lock is in the lock's slot, waiters
// (one Client each, as separate processes would be) are woken by SPUBLISH
// on their own channels and acquire in the order they queued, and nothing
// is left behind.
func TestCluster(t *testing.T) {
	cl := redistest.Cluster(t)
	ctx := redistest.Context(t)
	var nodes []rueidis.Client
	for _, n := range cl.Nodes() {
		nodes = append(nodes, n.Client(t))
	}
	for _, name := range []string{lockName(t), "{" + lockName(t) + "}:tagged"} {
		t.Run(name, func(t *testing.T) {
			rc := cl.Client(t)
			node := cl.NodeForKey(name).Client(t)
			c := wrap(t, rc)
			sharded, err := runtime.Of(c).Sharded(ctx)
			require.NoError(t, err)
			require.Equal(t, redistest.FeaturesOf(t, rc).ShardedPubSub(), sharded, "PubSubAuto: sharded on a Redis 7 cluster, classic on Redis 6")
			// subscribed lists the channels of the lock subscribed to: on
			// its node when sharded, on any node when classic (Redis 6).
			subscribed := func(ncs ...rueidis.Client) []string {
				if sharded {
					ncs = []rueidis.Client{node}
				}
				var out []string
				for _, nc := range ncs {
					cmd := nc.B().PubsubChannels().Pattern("*" + name + "*").Build()
					if sharded {
						cmd = nc.B().PubsubShardchannels().Pattern("*" + name + "*").Build()
					}
					got, err := nc.Do(ctx, cmd).AsStrSlice()
					require.NoError(t, err)
					out = append(out, got...)
				}
				slices.Sort(out)
				return slices.Compact(out)
			}

			holder := interlock.WithOwner(ctx, 1)
			require.NoError(t, fairlock.New(c, name).Lock(holder))

			const waiters = 4
			var (
				mu    sync.Mutex
				order []int
				wg    sync.WaitGroup
			)
			owners := make([]string, waiters)
			for i := range waiters {
				wc := wrap(t, rc) // a Client of its own, with its own hub
				wctx := interlock.WithOwner(ctx, int64(10+i))
				owners[i], err = wc.Owner(wctx)
				require.NoError(t, err)
				wg.Go(func() {
					m := fairlock.New(wc, name)
					if !assert.NoError(t, m.Lock(wctx)) {
						return
					}
					mu.Lock()
					order = append(order, i)
					mu.Unlock()
					time.Sleep(5 * time.Millisecond)
					assert.NoError(t, m.Unlock(wctx))
				})
				waitQueued(t, rc, name, i+1)
			}

			// All keys and waiter channels are in the lock's slot, and the
			// waiters are subscribed with SSUBSCRIBE on its node.
			slot := keys.Slot(name)
			chans := []string{keys.LockChannel(name)}
			for _, o := range owners {
				chans = append(chans, keys.LockChannel(name)+":"+o)
			}
			for _, k := range append([]string{name, queueOf(name), timeoutsOf(name)}, chans...) {
				n, err := node.Do(ctx, node.B().ClusterKeyslot().Key(k).Build()).AsInt64()
				require.NoError(t, err)
				assert.Equal(t, int64(slot), n, "slot of %s", k)
			}
			redistest.Eventually(t, 5*time.Second, func() bool {
				return len(subscribed(nodes...)) == waiters
			}, "one channel per waiter (sharded: on the lock's node)")
			assert.Equal(t, owners, queue(t, node, name))

			start := time.Now()
			require.NoError(t, fairlock.New(c, name).Unlock(holder))
			wg.Wait()
			t.Logf("%d waiters served in %v", waiters, time.Since(start).Round(time.Millisecond))
			assert.Less(t, time.Since(start), 5*time.Second, "woken by messages, not 30s timers")
			assert.Equal(t, []int{0, 1, 2, 3}, order)

			redistest.Eventually(t, 3*time.Second, func() bool {
				left := subscribed(nodes...)
				for _, nc := range nodes {
					ks, err := nc.Do(ctx, nc.B().Keys().Pattern("*"+name+"*").Build()).AsStrSlice()
					require.NoError(t, err)
					left = append(left, ks...)
				}
				return len(left) == 0
			}, "keys or channels left on the cluster")
		})
	}
}
