package security_test

import (
	"testing"

	"github.com/interlock-go/interlock/internal/redistest"
)

// TestMain checks for leaked goroutines after the tests. Every test starts
// its own server: they set passwords and ACL users, stop servers and need
// TLS, which a shared server cannot take.
func TestMain(m *testing.M) {
	redistest.Main(m, nil)
}
