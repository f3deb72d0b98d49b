//go:build unix

package main

import (
	"testing"

	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/clitest"
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
