//go:build unix

package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/clitest"
	"github.com/interlock-go/interlock/cmd/interlock/internal/inspect"
)

func TestMain(m *testing.M) {
	clitest.MainWithBinary(m)
}

// runInProcess runs interlock's main logic in this process and returns
// how it ended. Only commands that neither catch signals nor start
// processes may be run this way.
func runInProcess(t *testing.T, args ...string) clitest.Result {
	t.Helper()
	return clitest.Run(t, cli.Command{Run: dispatch}, args...)
}

// inspectJSON runs "inspect --json" on locks and returns the reports.
func inspectJSON(t *testing.T, locks ...string) []inspect.Report {
	t.Helper()
	res := runInProcess(t, append([]string{"inspect", "--redis", clitest.RedisURL(), "--json"}, locks...)...)
	require.Equal(t, 0, res.Code, res.Stderr)
	return clitest.JSONLines[inspect.Report](t, res.Stdout)
}
