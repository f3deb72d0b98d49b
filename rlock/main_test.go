package rlock_test

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

// lockName returns a key unique to the test.
func lockName(t *testing.T) string { return redistest.Name(t, "rlock-test:") }
