//go:build unix

package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/cmd/interlock/internal/clitest"
	"github.com/interlock-go/interlock/cmd/interlock/internal/inspect"
	"github.com/interlock-go/interlock/internal/redistest"
)

// On a server that enforces slots behind one address, run holds three
// watchdog locks on three slots past three watchdog timeouts while CMD
// inspects and lists them, and nothing is left once it exits.
func TestRunSlotted(t *testing.T) {
	t.Parallel()
	srv := redistest.Slotted(t)
	url := "redis://" + srv.Addr()
	names := []string{"slotted:lockA", "slotted:lockB", "slotted:lockC"}
	args := append([]string{"run", "--redis", url, "--watchdog-timeout", "1s"}, names...)
	args = append(args, "--", "sh", "-c", `sleep 3.2 && exec "$@"`, "sh",
		clitest.Binary(), "inspect", "--json", "--redis", url)
	res := clitest.RunBinary(t, "", append(args, names...)...)
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Empty(t, res.Stderr)
	reports := clitest.JSONLines[inspect.Report](t, res.Stdout)
	require.Len(t, reports, len(names), res.Stdout)
	for _, r := range reports {
		assert.True(t, r.Locked, "%+v", r)
		assert.Positive(t, r.TTLms, "%+v", r)
		assert.LessOrEqual(t, r.TTLms, int64(1000), "renewed to the watchdog timeout: %+v", r)
	}

	ls := runInProcess(t, "ls", "--redis", url)
	require.Equal(t, 0, ls.Code, ls.Stderr)
	rc := srv.Client(t)
	size, err := rc.Do(t.Context(), rc.B().Dbsize().Build()).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, size, "keys left after run: %s", ls.Stdout)
}
