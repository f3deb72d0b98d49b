package main

import (
	"context"
	"slices"
	"sync"
)

// A Library is one lock implementation under test: interlock, a peer, or a
// floor. Adding a library is one file that calls Register from an init
// function; nothing else in the harness names libraries.
//
// The harness opens every registered library once per process (Open), asks
// its Session for one Mutex per goroutine, and runs every scenario through
// the same loop for every library (see scenario.go).
type Library interface {
	// Name is the row label in the table and the value of -libs; it must be
	// unique. The child process of S4 finds its library by this name.
	Name() string
	// Open connects to the Redis at addr ("host:port"), with clusterMode a
	// seed node of the cluster. Connection setup is not measured.
	Open(ctx context.Context, addr string) (Session, error)
}

// A Session is an opened Library: its clients, counters and background
// goroutines.
type Session interface {
	// Mutex returns an exclusive lock on name that waits in Lock until it
	// acquires (or ctx ends). A Mutex is used by one goroutine only; every
	// goroutine asks for its own Mutex, also for the same name.
	Mutex(name string) Mutex
	// Commands returns how many commands this Session's clients have sent
	// so far, counted on the client side, and false when the library cannot
	// count them (the table then shows only the server-side counts).
	Commands() (int64, bool)
	Close() error
}

// A Mutex is one goroutine's handle on a lock.
type Mutex interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
}

// Optional capabilities of a Session. A scenario that needs a capability
// that a Session lacks shows "n/a" for it.
type (
	// FairLocker has a fair (FIFO) lock: scenario S5.
	FairLocker interface{ FairMutex(name string) Mutex }
	// RWLocker has a read/write lock; ReadMutex is its read half: S6.
	RWLocker interface{ ReadMutex(name string) Mutex }
	// Floor marks the floors (PINGs in place of lock and unlock). They run
	// only in the uncontended and parallel scenarios (S1, S2, S6). A floor's
	// Name starts with "floor:"; the first floor row is the denominator of
	// the "× floor" column.
	Floor interface{ IsFloor() }
	// ContendedFloor marks the floor of the scenarios that wait (S3, S4):
	// it runs only where the other floors do not, and its Name starts
	// with "floor:", so that it is the "× floor" denominator there.
	ContendedFloor interface{ IsContendedFloor() }
	// OneProcess marks a library that runs in one process only: the
	// scenarios split over two (S4) show it as n/a.
	OneProcess interface{ OneProcess() }
	// CellRunner lets a Session run a whole cell itself instead of the
	// harness calling Lock and Unlock in Go, e.g. a library that lives in
	// another process (a JVM) and measures there. It returns the cell's
	// Sample; ok false means "not supported here" (shown as n/a). The
	// harness still brackets the cell with INFO commandstats.
	CellRunner interface {
		RunCell(ctx context.Context, c Cell) (s Sample, ok bool, err error)
	}
	// OptIn marks a library that runs only when -libs names it.
	OptIn interface{ OptIn() }
	// CellReporter has something to say about each measured cell it ran,
	// printed with the progress on stderr ("" for nothing).
	CellReporter interface {
		CellDone(c Cell, s Sample) string
	}
)

type registered struct {
	order int
	lib   Library
}

var (
	registryMu sync.Mutex
	registry   []registered
)

// Register adds a library; rows are printed by ascending order (floors 0-9,
// interlock 10, Go peers 20-49, others from 50).
func Register(order int, lib Library) {
	registryMu.Lock()
	defer registryMu.Unlock()
	registry = append(registry, registered{order, lib})
}

// Libraries returns the registered libraries in row order.
func Libraries() []Library {
	registryMu.Lock()
	defer registryMu.Unlock()
	r := slices.Clone(registry)
	slices.SortStableFunc(r, func(a, b registered) int { return a.order - b.order })
	out := make([]Library, len(r))
	for i, x := range r {
		out[i] = x.lib
	}
	return out
}
