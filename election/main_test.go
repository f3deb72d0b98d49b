package election_test

import (
	"testing"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
)

// addr is the package's shared redis-server.
var addr string

func TestMain(m *testing.M) { redistest.Main(m, redistest.ShareServer(&addr)) }

// newClient returns an interlock Client on the shared server, closed when
// the test ends, with the rueidis client under it.
var newClient, _ = redistest.Clients(&addr, interlock.New)

// electionName returns a name unique to the test; every key that contains
// it (the lock, its token counter, its value key) is deleted when the test
// ends.
func electionName(t *testing.T) string { return redistest.Name(t, "election-test:", addr) }
