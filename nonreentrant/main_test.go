package nonreentrant_test

import (
	"testing"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
)

// addr is the package's shared redis-server.
var addr string

func TestMain(m *testing.M) { redistest.Main(m, redistest.ShareServer(&addr)) }

// newClient returns an interlock Client on the shared server, and the
// rueidis client under it, both closed when the test ends.
var newClient, _ = redistest.Clients(&addr, interlock.New)
