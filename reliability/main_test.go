package reliability

import (
	"fmt"
	"os"
	"sort"
	"testing"

	"github.com/interlock-go/interlock/internal/redistest"
)

// envWorker names the worker a re-executed test binary runs instead of the
// tests (see startWorker in worker_test.go).
const envWorker = "INTERLOCK_RELIABILITY_WORKER"

// workers maps a worker name to its body. Test files register their workers
// from a package-level var initialiser, before TestMain runs.
var workers = map[string]func() error{}

// register adds a worker; it returns true so that it can initialise a var.
func register(name string, run func() error) bool {
	if _, dup := workers[name]; dup {
		panic("reliability: worker " + name + " registered twice")
	}
	workers[name] = run
	return true
}

func TestMain(m *testing.M) {
	if name := os.Getenv(envWorker); name != "" {
		os.Exit(runWorker(name))
	}
	// Every test starts the servers it breaks; none is shared.
	redistest.Main(m, nil)
}

func runWorker(name string) int {
	run, ok := workers[name]
	if !ok {
		names := make([]string, 0, len(workers))
		for n := range workers {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(os.Stderr, "reliability: unknown worker %q (have %v)\n", name, names)
		return 2
	}
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "worker %s (pid %d): %v\n", name, os.Getpid(), err)
		return 1
	}
	return 0
}
