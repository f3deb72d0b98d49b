package multilock_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/multilock"
	"github.com/interlock-go/interlock/rlock"
)

// Guard called again and again during one hold, with a context that never
// ends, keeps nothing per call, for a MultiLock and a RedLock alike; the
// guards still end as the members do.
func TestRepeatedGuardsKeepNothing(t *testing.T) {
	ctx := redistest.Context(t)
	n := names(t, 3)
	var all, red []*rlock.Mutex
	c, _ := newClient(t)
	for i := range 3 {
		all = append(all, rlock.New(c, n[i]+":all"))
		ci, _ := newClient(t)
		red = append(red, rlock.New(ci, n[i]+":red"))
	}
	for _, tc := range []struct {
		name    string
		m       *multilock.Mutex
		members []*rlock.Mutex
		survive int // member losses the guard survives
	}{
		{"multilock", multilock.New(lockers(all)...), all, 0},
		{"redlock", multilock.NewRedLock(lockers(red)...), red, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, tc.m.Lock(ctx))
			first := tc.m.Guard(context.Background())
			require.NoError(t, first.Err())
			const calls = 20_000
			before := liveHeap()
			for range calls {
				require.NoError(t, tc.m.Guard(context.Background()).Err())
			}
			grown := liveHeap() - before
			assert.Less(t, grown/calls, int64(64), "bytes kept per Guard call (%d in all)", grown)

			for i := range tc.survive {
				require.True(t, redistest.Must[bool](t)(tc.members[i].ForceUnlock(ctx)))
				require.NoError(t, first.Err(), "a minority lost leaves a RedLock's guard on")
				require.NoError(t, tc.m.Guard(context.Background()).Err())
			}
			require.True(t, redistest.Must[bool](t)(tc.members[tc.survive].ForceUnlock(ctx)))
			select {
			case <-first.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("the guard outlived a lost quorum")
			}
			assert.ErrorIs(t, context.Cause(first), interlock.ErrLockLost)
			_ = tc.m.Unlock(ctx) // the members still held
		})
	}
}

func lockers(ms []*rlock.Mutex) []interlock.Locker {
	out := make([]interlock.Locker, len(ms))
	for i, m := range ms {
		out[i] = m
	}
	return out
}

// liveHeap returns the bytes of live heap objects, after a collection.
func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
