package interlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/rlock"
	"github.com/interlock-go/interlock/semaphore"
)

// TestOldestHolds: the age of the oldest current hold, per kind and per
// synchronizer, oldest first, from the Client's records; a release makes
// the next oldest the oldest. Without an Observer holds have no kind, and
// are named by key, unmapped.
func TestOldestHolds(t *testing.T) {
	c := newClient(t, interlock.WithObserver(&recorder{}), interlock.WithNameMapper(interlock.PrefixNames("app:")))
	ctx := interlock.WithOwner(context.Background(), interlock.NewOwnerID())
	old := rlock.New(c, "age:old")
	require.NoError(t, old.Lock(ctx))
	e := semaphore.NewExpirable(c, "age:permits")
	_, _ = e.Delete(ctx)
	_, err := e.TrySetPermits(ctx, 2)
	require.NoError(t, err)
	ids, err := e.Acquire(ctx, 2, 0)
	require.NoError(t, err)
	time.Sleep(300 * time.Millisecond)
	young := rlock.New(c, "age:young")
	require.NoError(t, young.Lock(ctx))
	fair := fairlock.New(c, "age:fair")
	require.NoError(t, fair.LockLease(ctx, time.Minute))
	assert.Empty(t, newClient(t).OldestHolds(true), "a Client that holds nothing")

	byKind := c.OldestHolds(false)
	require.Len(t, byKind, 3, "%+v", byKind)
	assert.Equal(t, []interlock.Kind{interlock.KindRLock, interlock.KindExpirable, interlock.KindFairLock},
		[]interlock.Kind{byKind[0].Kind, byKind[1].Kind, byKind[2].Kind}, "oldest first")
	assert.GreaterOrEqual(t, byKind[0].Age, 300*time.Millisecond)
	assert.Less(t, byKind[2].Age, 300*time.Millisecond)
	for _, h := range byKind {
		assert.Empty(t, h.Name)
	}

	byName := c.OldestHolds(true)
	require.Len(t, byName, 4, "%+v", byName)
	assert.Equal(t, interlock.HoldAge{Kind: interlock.KindRLock, Name: "age:old", Age: byName[0].Age}, byName[0])
	assert.Equal(t, interlock.HoldAge{Kind: interlock.KindExpirable, Name: "age:permits", Age: byName[1].Age}, byName[1],
		"two permits, one synchronizer")
	names := map[string]bool{}
	for _, h := range byName {
		names[h.Name] = true
	}
	assert.Equal(t, map[string]bool{"age:old": true, "age:permits": true, "age:young": true, "age:fair": true}, names)

	require.NoError(t, old.Unlock(ctx))
	byKind = c.OldestHolds(false)
	for _, h := range byKind {
		if h.Kind == interlock.KindRLock {
			assert.Less(t, h.Age, 300*time.Millisecond, "the young one is the oldest rlock now")
		}
	}
	require.NoError(t, young.Unlock(ctx))
	require.NoError(t, fair.Unlock(ctx))
	require.NoError(t, e.Release(ctx, ids...))
	assert.Empty(t, c.OldestHolds(false))

	// No Observer: no kinds, names by key as the NameMapper unmaps them.
	bare := newClient(t, interlock.WithNameMapper(interlock.PrefixNames("app:")))
	m := rlock.New(bare, "age:bare")
	require.NoError(t, m.Lock(ctx))
	got := bare.OldestHolds(true)
	require.Len(t, got, 1)
	assert.Equal(t, interlock.HoldAge{Name: "age:bare", Age: got[0].Age}, got[0])
	require.NoError(t, m.Unlock(ctx))
}

// TestRenewalFailuresNamed: a renew event with failures says whose holds
// they were, per synchronizer, adding up to Failures.
func TestRenewalFailuresNamed(t *testing.T) {
	rec := &recorder{}
	// Renewals every 667ms; a hold is lost only 2s after its last renewal,
	// well after the first failed one.
	rc := &stalledRenewals{Client: redistest.NewClient(t, addr)}
	c, err := interlock.New(rc, interlock.WithObserver(rec), interlock.WithWatchdogTimeout(2*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	ctx := interlock.WithOwner(context.Background(), interlock.NewOwnerID())
	a, b := rlock.New(c, "renew-failed:a"), fairlock.New(c, "renew-failed:b")
	require.NoError(t, a.Lock(ctx))
	require.NoError(t, b.Lock(ctx))
	require.NoError(t, b.Lock(ctx)) // re-entered: still one hold entry
	e := semaphore.NewExpirable(c, "renew-failed:permits")
	_, _ = e.Delete(ctx)
	_, err = e.TrySetPermits(ctx, 2)
	require.NoError(t, err)
	ids, err := e.Acquire(ctx, 2, 0)
	require.NoError(t, err)

	rc.stalled.Store(true)
	var failed interlock.Event
	require.Eventually(t, func() bool {
		for _, e := range rec.op(interlock.OpRenew) {
			if e.Failures > 0 {
				failed = e.Event
				return true
			}
		}
		return false
	}, 5*time.Second, 5*time.Millisecond, "a failed tick")
	rc.stalled.Store(false)
	assert.Equal(t, []interlock.RenewFailure{
		{Kind: interlock.KindFairLock, Name: "renew-failed:b", Holds: 1},
		{Kind: interlock.KindRLock, Name: "renew-failed:a", Holds: 1},
		{Kind: interlock.KindExpirable, Name: "renew-failed:permits", Holds: 2},
	}, failed.Failed)
	assert.Equal(t, 4, failed.Failures)
	for _, e := range rec.op(interlock.OpRenew) {
		if e.Failures == 0 {
			assert.Nil(t, e.Failed)
		}
	}

	require.NoError(t, a.Unlock(ctx))
	require.NoError(t, b.Unlock(ctx))
	require.NoError(t, b.Unlock(ctx))
	require.NoError(t, e.Release(ctx, ids...))
}
