package script

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/redistest"
)

// Ordered commands all go on one connection of a client that is not a
// cluster client, alone or first in a pipeline, whether it auto-pipelines
// or not, while commands with keys go on several: the order a take-back
// relies on (runtime.Ordered). A rueidis that spreads them is caught here.
func TestOrderedOnOneConnection(t *testing.T) {
	srv := redistest.Standalone(t)
	for _, tc := range []struct {
		name string
		opt  rueidis.ClientOption
	}{
		{"default", rueidis.ClientOption{}},
		{"without auto-pipelining", rueidis.ClientOption{DisableAutoPipelining: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opt := tc.opt
			opt.InitAddress = []string{srv.Addr()}
			rc, err := rueidis.NewClient(opt)
			require.NoError(t, err)
			t.Cleanup(rc.Close)
			alone := connections(t, func(ctx context.Context, i int) (int64, error) {
				return rc.Do(ctx, Ordered(rc, "CLIENT", []string{"ID"})).AsInt64()
			})
			assert.Len(t, alone, 1, "ordered commands alone")
			first := connections(t, func(ctx context.Context, i int) (int64, error) {
				k := "ordered:" + strconv.Itoa(i)
				res := rc.DoMulti(ctx, Ordered(rc, "GET", []string{k}), rc.B().ClientId().Build())
				return res[1].AsInt64()
			})
			assert.Len(t, first, 1, "pipelines led by an ordered command")
			if !tc.opt.DisableAutoPipelining {
				keyed := connections(t, func(ctx context.Context, i int) (int64, error) {
					k := "ordered:" + strconv.Itoa(i)
					res := rc.DoMulti(ctx, rc.B().Get().Key(k).Build(), rc.B().ClientId().Build())
					return res[1].AsInt64()
				})
				assert.Greater(t, len(keyed), 1, "pipelines led by a command with a key: the client must spread them for this test to mean anything")
			}
		})
	}
}

// connections runs call 64 times from each of 16 goroutines and returns
// the connection ids it answered.
func connections(t *testing.T, call func(ctx context.Context, i int) (int64, error)) map[int64]bool {
	t.Helper()
	var mu sync.Mutex
	ids := map[int64]bool{}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 64 {
				id, err := call(t.Context(), g*64+i)
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				ids[id] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return ids
}
