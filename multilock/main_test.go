package multilock_test

import (
	"testing"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
)

// addr is the package's shared redis-server.
var addr string

func TestMain(m *testing.M) { redistest.Main(m, redistest.ShareServer(&addr)) }

// newClient and wrap return interlock Clients closed when the test ends: on
// the shared server, with the rueidis client under it, or on a rueidis
// client of the test's.
var newClient, wrap = redistest.Clients(&addr, interlock.New)

// names returns n lock names unique to the test.
func names(t *testing.T, n int) []string {
	base := redistest.Name(t, "multilock-test:")
	out := make([]string, n)
	for i := range out {
		out[i] = base + ":" + string(rune('a'+i))
	}
	return out
}
