package redistest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/redistest"
)

// TestPauseReplicationRedis60 covers PauseReplication where CLIENT LIST has
// no laddr and the master has two replica links, so that the paused
// replica closes its own link: the write made then reaches the other
// replica only, and the paused one, promoted, does not have it.
func TestPauseReplicationRedis60(t *testing.T) {
	r := redistest.ContainerReplicas(t, redistest.Redis60, 2)
	ctx := t.Context()
	mc := r.Master().Client(t)
	require.NoError(t, mc.Do(ctx, mc.B().Set().Key("k").Value("v").Build()).Error())
	require.NoError(t, r.WaitSynced(ctx))

	require.NoError(t, r.PauseReplication(0))
	replies := mc.DoMulti(ctx,
		mc.B().Set().Key("k").Value("w").Build(),
		mc.B().Wait().Numreplicas(2).Timeout(1000).Build())
	require.NoError(t, replies[0].Error())
	acked, err := replies[1].AsInt64()
	require.NoError(t, err)
	assert.EqualValues(t, 1, acked, "WAIT counts the replica that was not cut off")

	require.NoError(t, r.Master().Kill())
	require.NoError(t, r.ResumeReplication(0))
	require.NoError(t, r.Promote(ctx, 0))
	rc := r.Replicas()[0].Client(t)
	got, err := rc.Do(ctx, rc.B().Get().Key("k").Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "v", got, "the promoted replica missed the write made while it was cut off")
}
