package renewal_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/renewal"
)

type guardKey struct{}

// A guard of a context that never ends is shared by every call during the
// hold, nested guards too: a request loop calling Guard(ctx) on a long hold
// keeps nothing per call.
func TestGuardsOfNeverEndingParentsAreShared(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	s := newScheduler(t, rc, renewal.Config{Lease: renewedLease, BatchSize: 100})
	outer, inner := "renew:guard:outer:"+t.Name(), "renew:guard:inner:"+t.Name()
	for _, k := range []string{outer, inner} {
		hold(t, rc, k, "me:1", renewedLease)
		require.NoError(t, s.Hold(k, "me:1", task, 0, time.Now()))
	}
	var last context.Context
	for i := range 10_000 {
		parent := context.WithValue(context.Background(), guardKey{}, i)
		g, ok := s.Guard(parent, outer, "me:1")
		require.True(t, ok)
		g, ok = s.Guard(g, inner, "me:1")
		require.True(t, ok)
		require.Equal(t, i, g.Value(guardKey{}), "a guard keeps its parent's values")
		require.NoError(t, g.Err())
		last = g
	}
	for _, k := range []string{outer, inner} {
		registered, shared := renewal.GuardsLen(renewal.LookupEntry(s, k, "me:1"))
		assert.Equal(t, 1, registered, "%s: registered guards", k)
		assert.Equal(t, 1, shared, "%s: shared guards", k)
	}

	// The shared guards end as a registered one does: the outer hold's
	// loss ends the nested guard with the loss as its cause.
	s.Lose(outer, "me:1")
	select {
	case <-last.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the nested guard outlived the outer hold")
	}
	assert.ErrorIs(t, context.Cause(last), task.Lost)
	require.Eventually(t, func() bool {
		registered, shared := renewal.GuardsLen(renewal.LookupEntry(s, inner, "me:1"))
		return registered == 0 && shared == 0
	}, 5*time.Second, 10*time.Millisecond, "the inner hold forgets a guard whose base ended")

	// A new guard of the inner hold alone is live again, and its release
	// ends it with context.Canceled.
	g, ok := s.Guard(context.Background(), inner, "me:1")
	require.True(t, ok)
	require.NoError(t, g.Err())
	_, held, end := s.Release(inner, "me:1")
	require.True(t, held)
	end(renewal.Released)
	require.Error(t, g.Err())
	assert.ErrorIs(t, context.Cause(g), context.Canceled)
}

// A guard of a context that ends is registered until that context ends,
// and no longer.
func TestGuardsOfEndingParentsAreForgotten(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	s := newScheduler(t, rc, renewal.Config{Lease: renewedLease, BatchSize: 100})
	key := "renew:guard:ending:" + t.Name()
	hold(t, rc, key, "me:1", renewedLease)
	require.NoError(t, s.Hold(key, "me:1", task, 0, time.Now()))
	for range 1000 {
		parent, cancel := context.WithCancel(context.Background())
		g, ok := s.Guard(parent, key, "me:1")
		require.True(t, ok)
		cancel()
		require.Error(t, g.Err())
	}
	e := renewal.LookupEntry(s, key, "me:1")
	require.Eventually(t, func() bool {
		registered, shared := renewal.GuardsLen(e)
		return registered == 0 && shared == 0
	}, 5*time.Second, 10*time.Millisecond, "guards of ended parents are forgotten")
}

// Extend moves the end of a lease hold: its guards, registered and shared,
// end at the new lease's end, later or earlier than the old one, and every
// hold of the entry gets the new lease. A watchdog entry keeps its holds
// and gets no deadline.
func TestExtendMovesGuardDeadlines(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	s := newScheduler(t, rc, renewal.Config{Lease: time.Second, BatchSize: 100})
	key := "renew:extend:" + t.Name()
	assert.False(t, s.Extend(key, "me:1", time.Second, time.Now()), "no entry")

	start := time.Now()
	require.NoError(t, s.Hold(key, "me:1", task, 100*time.Millisecond, start))
	require.NoError(t, s.Hold(key, "me:1", task, 100*time.Millisecond, start))
	held, watchdog := s.Extending(key, "me:1")
	require.True(t, held)
	require.False(t, watchdog)
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	g, ok := s.Guard(parent, key, "me:1")
	require.True(t, ok)
	shared := guard(t, s, key, "me:1")

	sent := time.Now()
	require.True(t, s.Extend(key, "me:1", 300*time.Millisecond, sent))
	assert.InDelta(t, 300*time.Millisecond, s.Remaining(key, "me:1"), float64(50*time.Millisecond))
	assert.Equal(t, 2, s.Holds(key, "me:1"))
	time.Sleep(time.Until(start.Add(150 * time.Millisecond)))
	require.NoError(t, g.Err(), "ended at the old lease")
	require.NoError(t, shared.Err(), "ended at the old lease")
	assert.Equal(t, shared.Done(), guard(t, s, key, "me:1").Done(), "the shared guard, moved, is still shared")
	for _, g := range []context.Context{g, shared} {
		<-g.Done()
		assert.GreaterOrEqual(t, time.Since(sent), 300*time.Millisecond)
		assert.ErrorIs(t, context.Cause(g), errLost)
	}
	assert.Zero(t, s.Holds(key, "me:1"), "the new lease ran out")

	// Shorter than the old lease: the guard ends sooner.
	start = time.Now()
	require.NoError(t, s.Hold(key, "me:1", task, time.Minute, start))
	g = guard(t, s, key, "me:1")
	require.True(t, s.Extend(key, "me:1", 50*time.Millisecond, time.Now()))
	select {
	case <-g.Done():
		assert.ErrorIs(t, context.Cause(g), errLost)
	case <-time.After(5 * time.Second):
		t.Fatal("the guard kept the old, longer lease")
	}

	// A watchdog hold stays one.
	wd := key + ":watchdog"
	hold(t, rc, wd, "me:1", time.Second)
	require.NoError(t, s.Hold(wd, "me:1", task, 0, time.Now()))
	held, watchdog = s.Extending(wd, "me:1")
	require.True(t, held)
	require.True(t, watchdog)
	require.True(t, s.Extend(wd, "me:1", time.Second, time.Now()))
	g = guard(t, s, wd, "me:1")
	time.Sleep(150 * time.Millisecond)
	assert.NoError(t, g.Err())
	assert.Equal(t, 1, s.Holds(wd, "me:1"))
}
