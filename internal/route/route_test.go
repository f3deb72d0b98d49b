package route_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/route"
)

func TestMain(m *testing.M) { redistest.Main(m, nil) }

// Every node of a cluster answers the same table, which covers every slot
// with the master that serves it; a MOVED learnt overrides it until the
// next Store.
func TestReadAndTable(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	cl := redistest.Cluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var first []route.Range
	for _, n := range cl.Nodes() {
		ranges, err := route.Read(ctx, n.Addr(), n.Client(t))
		require.NoError(t, err, n.Addr())
		if first == nil {
			first = ranges
		}
		assert.Equal(t, first, ranges, "%s answers the same table", n.Addr())
	}
	covered := 0
	for i, r := range first {
		covered += int(r.Last) - int(r.First) + 1
		if i > 0 {
			assert.Greater(t, r.First, first[i-1].Last, "sorted, without overlap")
		}
	}
	assert.Equal(t, route.Slots, covered)

	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: cl.Addrs()})
	require.NoError(t, err)
	defer rc.Close()
	vias := 0
	got, err := route.ReadAny(ctx, rc.Nodes(), time.Second, func(n rueidis.Client) (rueidis.CoreClient, func()) {
		vias++
		return n.Dedicate()
	})
	require.NoError(t, err)
	assert.Equal(t, first, got, "any node's answer")
	assert.Equal(t, 1, vias, "the first node answered")
	_, err = route.ReadAny(ctx, nil, time.Second, nil)
	assert.ErrorContains(t, err, "knows no node")

	var tab route.Table
	_, _, ok := tab.Master(0)
	assert.False(t, ok, "the zero Table knows nothing")
	require.NoError(t, tab.Refresh(ctx, tab.Generation(), func(context.Context) ([]route.Range, error) { return first, nil }))
	for i := range 32 {
		key := fmt.Sprintf("route:%d", i)
		addr, _, ok := tab.Master(keys.Slot(key))
		require.True(t, ok)
		assert.Equal(t, cl.NodeForKey(key).Addr(), addr, key)
	}
	assert.Len(t, tab.Masters(), len(cl.Nodes()))

	tab.Learn(keys.Slot("route:0"), "127.0.0.1:1")
	addr, _, _ := tab.Master(keys.Slot("route:0"))
	assert.Equal(t, "127.0.0.1:1", addr, "a MOVED learnt")
	assert.Len(t, tab.Masters(), len(cl.Nodes())+1)
	gen := tab.Generation()
	require.NoError(t, tab.Refresh(ctx, gen-1, func(context.Context) ([]route.Range, error) {
		t.Error("a refresh of a table that changed since runs no query")
		return nil, nil
	}))
	require.NoError(t, tab.Refresh(ctx, gen, func(context.Context) ([]route.Range, error) { return first, nil }))
	addr, _, _ = tab.Master(keys.Slot("route:0"))
	assert.Equal(t, cl.NodeForKey("route:0").Addr(), addr, "a Store forgets what MOVED taught")
}
