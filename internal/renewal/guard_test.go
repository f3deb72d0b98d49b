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
