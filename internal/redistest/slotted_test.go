package redistest_test

import (
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
)

// TestSlotted checks what the slot-enforcing endpoint is: a client with
// default options runs it as a standalone server, CLUSTER is unknown, the
// server says it is cluster-enabled, and a command whose keys span slots
// is refused while one within a slot is not.
func TestSlotted(t *testing.T) {
	t.Parallel()
	addr := redistest.SharedSlotted(t)
	rc := redistest.NewClient(t, addr)
	ctx := t.Context()
	assert.NotEqual(t, rueidis.ClientModeCluster, rc.Mode(), "rueidis must not find a cluster")

	err := rc.Do(ctx, rc.B().ClusterInfo().Build()).Error()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unknown command")
	info, err := rc.Do(ctx, rc.B().Info().Section("cluster").Build()).ToString()
	require.NoError(t, err)
	assert.Contains(t, info, "cluster_enabled:1")

	a, b := "slotted:a:"+t.Name(), "slotted:b:"+t.Name()
	require.NotEqual(t, keys.Slot(a), keys.Slot(b))
	t.Cleanup(func() {
		rc.Do(ctx, rc.B().Del().Key(a).Build())
		rc.Do(ctx, rc.B().Del().Key(b).Build())
	})
	err = rc.Do(ctx, rc.B().Mset().KeyValue().KeyValue(a, "1").KeyValue(b, "2").Build()).Error()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CROSSSLOT")
	require.NoError(t, rc.Do(ctx, rc.B().Set().Key(a).Value("1").Build()).Error())
	require.NoError(t, rc.Do(ctx, rc.B().Set().Key(b).Value("2").Build()).Error())
	n, err := rc.Do(ctx, rc.B().Publish().Channel("slotted:"+t.Name()).Message("x").Build()).AsInt64()
	require.NoError(t, err, "classic PUBLISH works")
	assert.Zero(t, n)
}
