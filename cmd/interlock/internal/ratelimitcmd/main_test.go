//go:build unix

package ratelimitcmd

import (
	"testing"

	"github.com/interlock-go/interlock/cmd/interlock/internal/clitest"
)

func TestMain(m *testing.M) {
	clitest.Main(m)
}
