package multilock_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
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
			// The members' Clients dial the connection of their renewal
			// rounds after their first script; it is not kept by Guard.
			time.Sleep(200 * time.Millisecond)
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

// A lost member names itself in the guard's cause: an *interlock.Error of
// its kind and name, Op lost, wrapping ErrLockLost and the reason. For a
// MultiLock and a RedLock, with a parent that ends and one that never does.
func TestGuardNamesTheLostMember(t *testing.T) {
	ctx := redistest.Context(t)
	for _, shared := range []bool{false, true} {
		parent := ctx
		if shared {
			parent = context.Background()
		}
		t.Run(fmt.Sprintf("multilock/shared=%v", shared), func(t *testing.T) {
			n := names(t, 2)
			// Renewed every 667ms, which finds the deleted member.
			c, rc := newClient(t, interlock.WithWatchdogTimeout(2*time.Second))
			a, b := rlock.New(c, n[0]), fairlock.New(c, n[1])
			m := multilock.New(a, b)
			require.NoError(t, m.Lock(ctx))
			g := m.Guard(parent)
			require.NoError(t, rc.Do(ctx, rc.B().Del().Key(n[1]).Build()).Error())
			select {
			case <-g.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the guard outlived its member")
			}
			assertNames(t, context.Cause(g), interlock.KindFairLock, n[1], interlock.ErrKeyGone)
			_ = m.Unlock(ctx)
		})
		t.Run(fmt.Sprintf("redlock/shared=%v", shared), func(t *testing.T) {
			n := names(t, 3)
			var members []*rlock.Mutex
			for i := range 3 {
				ci, _ := newClient(t)
				members = append(members, rlock.New(ci, n[i]))
			}
			m := multilock.NewRedLock(lockers(members)...)
			require.NoError(t, m.Lock(ctx))
			g := m.Guard(parent)
			require.True(t, must[bool](t)(members[2].ForceUnlock(ctx)))
			require.NoError(t, g.Err(), "a minority lost leaves the guard on")
			require.True(t, must[bool](t)(members[0].ForceUnlock(ctx)))
			select {
			case <-g.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("the guard outlived a lost quorum")
			}
			// The guard counts each member's end on a goroutine of its own
			// (context.AfterFunc), so the two ends may be counted in either
			// order: the cause names the one counted second.
			cause := context.Cause(g)
			e, ok := errors.AsType[*interlock.Error](cause)
			require.True(t, ok, "cause %v names no member", cause)
			require.Contains(t, []string{n[0], n[2]}, e.Name, "a lost member")
			assertNames(t, cause, interlock.KindRLock, e.Name, interlock.ErrForceUnlocked)
			_ = m.Unlock(ctx)
		})
	}
}

// assertNames checks that cause is the loss of the member of kind and
// name, for reason.
func assertNames(t *testing.T, cause error, kind interlock.Kind, name string, reason error) {
	t.Helper()
	assert.ErrorIs(t, cause, interlock.ErrLockLost)
	assert.ErrorIs(t, cause, reason)
	e, ok := errors.AsType[*interlock.Error](cause)
	require.True(t, ok, "cause %v names no member", cause)
	assert.Equal(t, kind, e.Kind)
	assert.Equal(t, name, e.Name)
	assert.Equal(t, interlock.OpLost, e.Op)
	assert.Contains(t, cause.Error(), name)
}
