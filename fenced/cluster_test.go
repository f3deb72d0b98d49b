package fenced_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fenced"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/runtime"
)

// TestCluster runs the fenced lock and the RedisFence on a three-master
// cluster, where releases go out with SPUBLISH: a waiter in another Client
// is woken by the release (not by the 30s lease), the counter lives in the
// lock's slot, and a fence refuses keys outside its slot before sending.
func TestCluster(t *testing.T) {
	cl := redistest.Cluster(t)
	var sent atomic.Int64
	counting := &redistest.Hooked{Client: cl.Client(t)}
	counting.Set(func(ctx context.Context, cmd rueidis.Completed, next func() rueidis.RedisResult) rueidis.RedisResult {
		sent.Add(1) // Do only: a renewal's DoMulti is no key of the test's
		return next()
	})
	rc := counting.Client
	require.Equal(t, rueidis.ClientModeCluster, counting.Mode())
	a, b := wrap(t, counting), wrap(t, counting)
	ctx := redistest.Context(t)
	sharded, err := runtime.Of(a).Sharded(ctx)
	require.NoError(t, err)
	require.Equal(t, redistest.FeaturesOf(t, rc).ShardedPubSub(), sharded, "PubSubAuto: sharded on a Redis 7 cluster, classic on Redis 6")

	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	for _, tc := range []struct{ name, tag string }{
		{"fenced-cluster-" + suffix, "fenced-cluster-" + suffix},
		{"{fenced-order-" + suffix + "}:42", "fenced-order-" + suffix},
	} {
		t.Run(tc.tag, func(t *testing.T) {
			name := tc.name
			fenceKey, dataKey := "{"+tc.tag+"}:fence", "{"+tc.tag+"}:data"
			t.Cleanup(func() {
				for _, k := range []string{name, tokenKey(name), fenceKey, dataKey} {
					rc.Do(context.Background(), rc.B().Del().Key(k).Build())
				}
			})
			slot := keys.Slot(name)
			require.Equal(t, slot, keys.Slot(tokenKey(name)))
			require.Equal(t, slot, keys.Slot(fenceKey))

			ctxA := interlock.WithOwner(ctx, 1)
			ctxB := interlock.WithOwner(ctx, 1)
			ma, mb := fenced.New(a, name), fenced.New(b, name)
			ta, err := ma.LockToken(ctxA)
			require.NoError(t, err)
			tb, err := ma.LockToken(ctxA) // re-entry
			require.NoError(t, err)
			assert.Equal(t, ta+1, tb)

			type result struct {
				token uint64
				err   error
				at    time.Time
			}
			got := make(chan result, 1)
			go func() {
				tok, err := mb.LockToken(ctxB)
				got <- result{tok, err, time.Now()}
			}()
			redistest.Eventually(t, 5*time.Second, func() bool { return b.Stats().Channels == 1 }, "waiter not subscribed")
			time.Sleep(20 * time.Millisecond)
			require.NoError(t, ma.Unlock(ctxA))
			require.NoError(t, ma.Unlock(ctxA))
			released := time.Now()
			var r result
			select {
			case r = <-got:
			case <-time.After(10 * time.Second):
				t.Fatal("the waiter was not woken")
			}
			require.NoError(t, r.err)
			assert.Less(t, r.at.Sub(released), 5*time.Second, "woken by SPUBLISH, not by the lease")
			assert.Equal(t, tb+1, r.token)

			node := cl.NodeForKey(name).Client(t)
			counter, err := node.Do(ctx, node.B().Get().Key(tokenKey(name)).Build()).ToString()
			require.NoError(t, err)
			assert.Equal(t, strconv.FormatUint(r.token, 10), counter, "the counter on the lock's node")

			fence := fenced.NewRedisFence(counting, fenceKey)
			require.NoError(t, fence.Set(ctx, r.token, dataKey, "b"))
			require.ErrorIs(t, fence.Set(ctx, ta, dataKey, "a"), fenced.ErrStale, "a stale token was admitted")
			value, err := node.Do(ctx, node.B().Get().Key(dataKey).Build()).ToString()
			require.NoError(t, err)
			assert.Equal(t, "b", value)

			elsewhere := "elsewhere-" + suffix
			for keys.Slot(elsewhere) == slot {
				elsewhere += "x"
			}
			before := sent.Load()
			err = fence.Set(ctx, r.token, elsewhere, "x")
			assert.ErrorIs(t, err, interlock.ErrInvalid)
			assert.Equal(t, before, sent.Load(), "a key in another slot was sent")
			require.NoError(t, mb.Unlock(ctxB))
		})
	}
}
