//go:build unix

package demo

import (
	"testing"

	"github.com/interlock-go/interlock/cmd/interlock/internal/clitest"
)

func TestMain(m *testing.M) {
	clitest.MainWithBinary(m)
}
