package redistest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/redisproc"
)

// runIDs reads the run_id (INFO server) of the server at each address,
// for stoppedAll.
func runIDs(t *testing.T, addrs ...string) map[string]string {
	t.Helper()
	ids := make(map[string]string, len(addrs))
	for _, addr := range addrs {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		info, err := redisproc.CommandString(ctx, addr, "INFO", "server")
		cancel()
		require.NoError(t, err, "INFO server on %s", addr)
		id, ok := redisproc.InfoField(info, "run_id")
		require.True(t, ok, "INFO server on %s has no run_id", addr)
		ids[addr] = id
	}
	return ids
}

// stoppedAll asserts that none of the servers of ids (address to run_id)
// answers any more. A port that a test running in parallel took once it
// was free, which the kernel often hands out again at once, answers with
// another run_id and counts as stopped.
func stoppedAll(t *testing.T, ids map[string]string) {
	t.Helper()
	for addr, id := range ids {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		info, err := redisproc.CommandString(ctx, addr, "INFO", "server")
		cancel()
		if err != nil {
			continue // refused, or not a server that answers at once
		}
		now, _ := redisproc.InfoField(info, "run_id")
		assert.NotEqual(t, id, now, "%s still answers after Stop", addr)
	}
}
