package runtime

import (
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/redistest"
)

// The probe tells a cluster client that keeps one connection per node
// (rueidis's default) from one that keeps two: the order a take-back
// relies on without a detached send (Ordered).
func TestOneConnectionPerNode(t *testing.T) {
	addrs := redistest.SharedCluster(t)
	for _, tc := range []struct {
		name      string
		multiplex int
		one       bool
	}{
		{"default", 0, true},
		{"two connections per node", 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, noAuto := range []bool{false, true} {
				rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: addrs,
					PipelineMultiplex: tc.multiplex, DisableAutoPipelining: noAuto})
				require.NoError(t, err)
				t.Cleanup(rc.Close)
				assert.Equal(t, tc.one, oneConnection(t.Context(), rc, nodeProbeCalls), "without auto-pipelining: %v", noAuto)
			}
		})
	}
}
