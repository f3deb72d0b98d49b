package redistest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"
)

// ContextTimeout bounds the context of Context: far above what any test
// waits for, it only ends a test that hangs.
const ContextTimeout = time.Minute

// Context returns a context for tb that ends after ContextTimeout, or when
// tb ends.
func Context(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), ContextTimeout)
	tb.Cleanup(cancel)
	return ctx
}

// Tolerances of timing assertions: they must hold on a loaded 2-core
// machine running -race.
const (
	Prompt = 5 * time.Second        // "happens promptly": the bound of every poll
	Slack  = 700 * time.Millisecond // how late a timed event may be
	Quiet  = 200 * time.Millisecond // "does not happen" observation window
)

// Eventually fails tb unless cond returns true within d, polling it every
// 5 ms (require.Eventually).
func Eventually(tb testing.TB, d time.Duration, cond func() bool, msg string) {
	tb.Helper()
	require.Eventually(tb, cond, d, 5*time.Millisecond, msg)
}

// Name returns prefix followed by tb's name, its slashes made colons
// ("rlock-test:TestGuard:cluster"): a name unique to the test, for the keys
// it writes to a server its package shares. With addrs, every key that
// contains the name is deleted when tb ends, on the server or cluster at
// addrs, on the shared cluster if one was started (SharedCluster) and on
// the shared slot-enforcing endpoint if one was (SharedSlotted), so that
// -count reruns start afresh.
func Name(tb testing.TB, prefix string, addrs ...string) string {
	name := prefix + strings.ReplaceAll(tb.Name(), "/", ":")
	if len(addrs) > 0 {
		addrs = slices.Clone(addrs)
		tb.Cleanup(func() {
			DeleteLike(addrs, name)
			if cl := SharedClusterAddrs(); cl != nil {
				DeleteLike(cl, name)
			}
			if sl := SharedSlottedAddr(); sl != "" {
				DeleteLike([]string{sl}, name)
			}
		})
	}
	return name
}

// Must returns a function that fails tb on a non-nil error and otherwise
// returns the value: Must[int](t)(m.HoldCount(ctx)).
func Must[T any](tb testing.TB) func(v T, err error) T {
	return func(v T, err error) T {
		tb.Helper()
		require.NoError(tb, err)
		return v
	}
}

// Clients returns the two ways the tests of a package open a client of the
// library under test, each closed when its test ends: newClient opens one
// on a new rueidis client of the server at *addr (the package's shared
// server, whose address TestMain stores there) and returns both; wrap
// opens one on a rueidis client the test made. open is the library's
// constructor (interlock.New); this package does not import the library,
// whose tests import it.
//
//	var newClient, wrap = redistest.Clients(&addr, interlock.New)
func Clients[C interface{ Close() error }, O any](addr *string, open func(rueidis.Client, ...O) (C, error)) (
	newClient func(tb testing.TB, opts ...O) (C, rueidis.Client),
	wrap func(tb testing.TB, rc rueidis.Client, opts ...O) C,
) {
	wrap = func(tb testing.TB, rc rueidis.Client, opts ...O) C {
		tb.Helper()
		return opened(tb, open, rc, opts)
	}
	newClient = func(tb testing.TB, opts ...O) (C, rueidis.Client) {
		tb.Helper()
		rc := NewClient(tb, *addr)
		return opened(tb, open, rc, opts), rc
	}
	return newClient, wrap
}

// opened opens a client of the library on rc, closed when tb ends.
func opened[C interface{ Close() error }, O any](tb testing.TB, open func(rueidis.Client, ...O) (C, error), rc rueidis.Client, opts []O) C {
	tb.Helper()
	c, err := open(rc, opts...)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// Target is a deployment a test runs on (Each): the package's standalone
// server, the shared cluster or the shared slot-enforcing endpoint, with
// the library's constructor.
type Target[C interface{ Close() error }, O any] struct {
	// Cluster says the target is the shared cluster.
	Cluster bool
	// Slotted says the target is the shared slot-enforcing endpoint
	// (SharedSlotted): a standalone server to the client that refuses
	// commands whose keys span slots.
	Slotted bool
	// Addrs are the server's address, or the cluster's nodes.
	Addrs []string
	open  func(rueidis.Client, ...O) (C, error)
}

// Each runs f as three subtests: "standalone" on the server at addr (the
// package's shared one), "cluster" on the shared cluster (SharedCluster),
// then "slotted" on the shared slot-enforcing endpoint (SharedSlotted).
// open is the library's constructor (interlock.New), with which the target
// opens clients.
func Each[C interface{ Close() error }, O any](t *testing.T, addr string, open func(rueidis.Client, ...O) (C, error), f func(t *testing.T, tg Target[C, O])) {
	t.Run("standalone", func(t *testing.T) { f(t, Target[C, O]{Addrs: []string{addr}, open: open}) })
	t.Run("cluster", func(t *testing.T) { f(t, Target[C, O]{Cluster: true, Addrs: SharedCluster(t), open: open}) })
	t.Run("slotted", func(t *testing.T) { f(t, Target[C, O]{Slotted: true, Addrs: []string{SharedSlotted(t)}, open: open}) })
}

// RC returns a new rueidis client on the target, closed when tb ends.
func (tg Target[C, O]) RC(tb testing.TB) rueidis.Client {
	tb.Helper()
	return NewClient(tb, tg.Addrs...)
}

// Client returns a client of the library on a new rueidis client of the
// target, and that rueidis client, both closed when tb ends.
func (tg Target[C, O]) Client(tb testing.TB, opts ...O) (C, rueidis.Client) {
	tb.Helper()
	rc := tg.RC(tb)
	return opened(tb, tg.open, rc, opts), rc
}

// Wrap returns a client of the library on rc, closed when tb ends.
func (tg Target[C, O]) Wrap(tb testing.TB, rc rueidis.Client, opts ...O) C {
	tb.Helper()
	return opened(tb, tg.open, rc, opts)
}
