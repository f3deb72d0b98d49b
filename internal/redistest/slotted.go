package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/interlock-go/interlock/internal/redisproc"
)

// SlottedAdmin is the name CLUSTER is renamed to on a slot-enforcing
// endpoint (StartSlotted): clients that send CLUSTER get "unknown
// command", as behind a proxy or a managed service's single address.
const SlottedAdmin = "REDISTEST-SLOTS-ADMIN"

// slottedTimeout bounds the start of a slot-enforcing endpoint: a new
// cluster master reports cluster_state:ok two seconds after it started.
const slottedTimeout = 20 * time.Second

// StartSlotted starts a slot-enforcing single endpoint: a cluster-enabled
// server that owns all 16384 slots and has CLUSTER renamed to
// SlottedAdmin, on a free port of 127.0.0.1. A client that connects to it
// with default options finds no CLUSTER command, so rueidis runs it as a
// standalone server, which still answers CROSSSLOT to any command or
// script whose keys span slots: the way managed services and proxies
// present a cluster behind one address. It returns once the server
// reports cluster_state:ok (about two seconds). The caller must call Stop.
// With INTERLOCK_TEST_IMAGE set it starts that image in a container; it
// ignores REDIS_ADDR.
func StartSlotted(opts ...Option) (*Server, error) {
	o := buildOptions(opts)
	args := slices.Concat([]string{"--rename-command", "CLUSTER", SlottedAdmin}, o.args)
	var s *Server
	var err error
	img, ok, err := envImage()
	switch {
	case err != nil:
		return nil, err
	case ok:
		if err = dockerReady(); err != nil {
			return nil, err
		}
		s, err = startContainer(img, args, true)
	default:
		s, err = startProcess(args, true)
	}
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), slottedTimeout)
	defer cancel()
	if err := ownAllSlots(ctx, s.Addr()); err != nil {
		err = fmt.Errorf("redistest: slot-enforcing endpoint at %s: %w%s", s.Addr(), err, logTails(s))
		s.Stop()
		return nil, err
	}
	announce("slot-enforcing endpoint", s)
	return s, nil
}

// ownAllSlots gives every slot to the node at addr and waits until it
// reports cluster_state:ok.
func ownAllSlots(ctx context.Context, addr string) error {
	if _, err := redisproc.CommandString(ctx, addr, SlottedAdmin, "ADDSLOTSRANGE", "0", strconv.Itoa(SlotCount-1)); err != nil {
		// Redis 6 has no ADDSLOTSRANGE: every slot, one by one.
		args := []string{SlottedAdmin, "ADDSLOTS"}
		for slot := range SlotCount {
			args = append(args, strconv.Itoa(slot))
		}
		if _, err2 := redisproc.CommandString(ctx, addr, args...); err2 != nil {
			return fmt.Errorf("ADDSLOTSRANGE: %w; ADDSLOTS: %w", err, err2)
		}
	}
	for {
		info, err := redisproc.CommandString(ctx, addr, SlottedAdmin, "INFO")
		if err == nil {
			if state, _ := redisproc.InfoField(info, "cluster_state"); state == "ok" {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Slotted starts a slot-enforcing endpoint (StartSlotted) for the test tb
// and stops it with tb.Cleanup. It skips or fails tb as SkipOrFail does
// when no server can be had.
func Slotted(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	s, err := StartSlotted(opts...)
	SkipOrFail(tb, err)
	tb.Cleanup(func() { s.cleanup(tb) })
	return s
}

// EnvSlotted names the environment variable that, set to "0", skips the
// tests on the shared slot-enforcing endpoint (SharedSlotted), as
// scripts/matrix does on most images to keep the matrix's load down.
const EnvSlotted = "INTERLOCK_TEST_SLOTTED"

// The package's shared slot-enforcing endpoint, started by the first
// SharedSlotted and stopped by Main once the tests have run.
var sharedSlotted struct {
	mu      sync.Mutex
	started bool
	server  *Server
	err     error
}

// SharedSlotted returns the address of a slot-enforcing endpoint
// (StartSlotted) that the tests of a package share: the first call starts
// it, later calls return the same one, and Main stops it after the tests.
// It skips (or, with CI=true, fails) tb as SkipOrFail does, on every call,
// when it could not start. Tests that stop or pause it must start their
// own (Slotted).
func SharedSlotted(tb testing.TB) string {
	tb.Helper()
	if os.Getenv(EnvSlotted) == "0" {
		tb.Skipf("%s=0: no shared slot-enforcing endpoint in this run", EnvSlotted)
	}
	sharedSlotted.mu.Lock()
	if !sharedSlotted.started {
		sharedSlotted.started = true
		sharedSlotted.server, sharedSlotted.err = StartSlotted()
	}
	s, err := sharedSlotted.server, sharedSlotted.err
	sharedSlotted.mu.Unlock()
	SkipOrFail(tb, err)
	return s.Addr()
}

// SharedSlottedAddr returns the address of the shared slot-enforcing
// endpoint, or "" when no test has started it: for clean-ups that must
// not start it.
func SharedSlottedAddr() string {
	sharedSlotted.mu.Lock()
	defer sharedSlotted.mu.Unlock()
	if sharedSlotted.server == nil {
		return ""
	}
	return sharedSlotted.server.Addr()
}

// stopSharedSlotted stops the shared slot-enforcing endpoint, if one was
// started.
func stopSharedSlotted() {
	sharedSlotted.mu.Lock()
	defer sharedSlotted.mu.Unlock()
	if sharedSlotted.server != nil {
		sharedSlotted.server.Stop()
	}
	sharedSlotted.server, sharedSlotted.err, sharedSlotted.started = nil, nil, false
}
