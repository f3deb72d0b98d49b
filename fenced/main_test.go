package fenced_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/script"
)

// addr is the package's shared redis-server.
var addr string

// envWorker, when set, makes the test binary a worker process (see
// pause_test.go) instead of running tests.
const envWorker = "INTERLOCK_FENCED_WORKER"

// runWorker runs the worker of the given mode and returns its exit status.
// It is set by the files that define workers.
var runWorker func(mode string) int

func TestMain(m *testing.M) {
	if mode := os.Getenv(envWorker); mode != "" {
		if runWorker == nil {
			fmt.Fprintf(os.Stderr, "no worker %q on this platform\n", mode)
			os.Exit(2)
		}
		os.Exit(runWorker(mode))
	}
	redistest.Main(m, redistest.ShareServer(&addr))
}

// newClient and wrap return interlock Clients closed when the test ends: on
// the shared server, with the rueidis client under it, or on a rueidis
// client of the test's.
var newClient, wrap = redistest.Clients(&addr, interlock.New)

// lockName returns a key unique to the test; every key that contains it,
// its token counter among them, is deleted when the test ends.
func lockName(t *testing.T) string { return redistest.Name(t, "fenced-test:", addr) }

// tokenKey spells out the counter's name by hand (§1.5), rather than
// computing it the way the package does.
func tokenKey(name string) string {
	if strings.Contains(name, "{") {
		return "redisson_lock_token:" + name
	}
	return "redisson_lock_token:{" + name + "}"
}

// runs reports whether cmd runs script.
func runs(cmd rueidis.Completed, script *script.Script) bool {
	args := cmd.Commands()
	return len(args) > 1 && args[0] == "EVALSHA" && args[1] == script.SHA1()
}
