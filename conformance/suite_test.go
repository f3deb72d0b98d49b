// The conformance suite every lock kind runs, in the manner of
// testing/fstest.TestFS: one test per kind (kinds_test.go) calls Run with a
// Kind, against the package's redis-server and its cluster. The suite
// checks the contracts of interlock.Locker that hold for every kind; a
// kind's package keeps only the tests of what is its own. The package has
// tests only: nothing in it is importable.
package conformance_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/script"
)

// Kind says how to build a lock of one kind, and names the few ways it
// differs from the others.
type Kind struct {
	// Name is the kind in its errors and events (interlock.KindRLock).
	Name interlock.Kind
	// Prefix starts the name of every lock the suite takes ("rlock-test:").
	Prefix string
	// Addr is the redis-server the suite runs on, or a node of the
	// cluster it runs on (Run sets them); safe mode starts its own.
	Addr string
	// Cluster says Addr is a cluster node, Slotted that it is a
	// slot-enforcing endpoint (redistest.SharedSlotted): with either,
	// safe mode, which needs a replica of a standalone master, is skipped.
	Cluster, Slotted bool
	// New returns the lock called name on c.
	New func(c *interlock.Client, name string) interlock.Locker
	// Acquire lists every acquire script of the kind, Unlock its unlock
	// script: the suite loses their replies.
	Acquire []*script.Script
	Unlock  *script.Script

	// The differences between kinds.

	// Shared, when set, makes the kind a read half: its holds are shared,
	// so two owners may hold it at once. It returns the lock on the same
	// name that excludes them (the write half).
	Shared func(c *interlock.Client, name string) interlock.Locker
	// Fair: waiters queue on the server, so a waiter leaves traces there,
	// and a TryLock wait, when not 0, must be at least 1ms.
	Fair bool
	// Kept returns the keys of a lock that outlive its holds (the fenced
	// token counter); "nothing left behind" leaves them out.
	Kept func(name string) []string
	// Polls: waiters poll and never subscribe (a spin lock).
	Polls bool
	// Reentered, when set, makes the kind non-reentrant: an owner's second
	// acquisition fails with this error, and the suite's tests take one
	// hold where they would take two.
	Reentered error
}

// Run runs the suite for k, one subtest per contract: on the package's
// server, on the 3-master cluster the kinds share (redistest.SharedCluster),
// then on the slot-enforcing endpoint they share (redistest.SharedSlotted).
func Run(t *testing.T, k Kind) {
	require.NotNil(t, k.New, "Kind.New")
	require.NotEmpty(t, k.Acquire, "Kind.Acquire")
	require.NotNil(t, k.Unlock, "Kind.Unlock")
	// The three targets are three servers and share nothing, so they run
	// side by side: the contracts mostly wait on leases and timers. In the
	// container matrix, which runs beside the packages stage, they run in
	// turn: side by side there, a 3 s watchdog lease once went unrenewed
	// in CI's busiest minutes.
	side := func(t *testing.T) {
		if os.Getenv(redistest.EnvImage) == "" {
			t.Parallel()
		}
	}
	t.Run("standalone", func(t *testing.T) {
		side(t)
		k := k
		k.Addr = addr
		run(t, k)
	})
	t.Run("cluster", func(t *testing.T) {
		side(t)
		k := k
		k.Addr, k.Cluster = redistest.SharedCluster(t)[0], true
		run(t, k)
	})
	t.Run("slotted", func(t *testing.T) {
		side(t)
		k := k
		k.Addr, k.Slotted = redistest.SharedSlotted(t), true
		run(t, k)
	})
}

func run(t *testing.T, k Kind) {
	s := &suite{Kind: k}
	t.Run("Reentrancy", shared(s.reentrancy))
	t.Run("Lease", func(t *testing.T) {
		t.Run("LockLease", shared(s.lockLease))
		t.Run("TryLock", shared(s.tryLockLease))
	})
	t.Run("Guard", func(t *testing.T) {
		t.Run("Released", shared(s.guardReleased))
		t.Run("Deleted", shared(s.guardDeleted))
		t.Run("ForceUnlocked", shared(s.guardForceUnlocked))
		t.Run("NotHeld", shared(s.guardNotHeld))
		t.Run("Repeated", alone(s.guardRepeated))
	})
	t.Run("Remaining", shared(s.remaining))
	t.Run("Extend", func(t *testing.T) {
		t.Run("Lease", shared(s.extendLease))
		t.Run("Watchdog", shared(s.extendWatchdog))
		t.Run("Gone", shared(s.extendGone))
	})
	t.Run("SafeMode", shared(s.safeMode))
	t.Run("MaxHold", shared(s.maxHold))
	t.Run("LostUnlockReply", shared(s.lostUnlockReply))
	t.Run("LostAcquireReply", shared(s.lostAcquireReply))
	t.Run("LateAcquire", shared(s.lateAcquire))
	t.Run("Close", func(t *testing.T) {
		t.Run("ClosedClient", shared(s.closedClient))
		t.Run("WakesWaiters", shared(s.closeWakesWaiters))
	})
	t.Run("BadInput", shared(s.badInput))
	t.Run("NotHeldError", shared(s.notHeldError))
}

// quiet keeps the targets' subtests, which run side by side, out of the
// way of a subtest that measures the process's heap: the others hold it
// shared, that one alone.
var quiet sync.RWMutex

// shared runs f beside the other targets' subtests.
func shared(f func(*testing.T)) func(*testing.T) {
	return func(t *testing.T) {
		quiet.RLock()
		defer quiet.RUnlock()
		f(t)
	}
}

// alone runs f while no other subtest of the suite runs.
func alone(f func(*testing.T)) func(*testing.T) {
	return func(t *testing.T) {
		quiet.Lock()
		defer quiet.Unlock()
		f(t)
	}
}

// suite is one Run: the kind and the helpers its subtests share.
type suite struct{ Kind }

// depth is how many holds an owner takes where a test stacks them: two,
// or one for a non-reentrant kind.
func (s *suite) depth() int {
	if s.Reentered != nil {
		return 1
	}
	return 2
}

// latchPrefix starts the keys of unlock latches, which the server keeps
// for a moment after an unlock and which are no lock state.
const latchPrefix = keys.UnlockLatchPrefix + ":"

// rival returns the lock on name that an owner must hold to keep another
// out of k's lock: the lock itself, or the write half of a read half.
func (s *suite) rival(c *interlock.Client, name string) interlock.Locker {
	if s.Shared != nil {
		return s.Shared(c, name)
	}
	return s.New(c, name)
}

// lockName returns a name unique to the test, whose keys are deleted when
// it ends.
func (s *suite) lockName(t *testing.T) string {
	name := s.Prefix + strings.ReplaceAll(t.Name(), "/", ":")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr}})
		if err != nil {
			return
		}
		defer rc.Close()
		ks, err := everyNode(ctx, rc, func(b rueidis.Builder) rueidis.Completed { return b.Keys().Pattern(like(name)).Build() })
		if err == nil && len(ks) > 0 {
			rc.Do(ctx, rc.B().Del().Key(ks...).Build()) // one slot: the keys share the name's hash tag
		}
	})
	return name
}

// like is the KEYS pattern of every key that contains name.
func like(name string) string {
	var b strings.Builder
	b.WriteByte('*')
	for _, r := range name {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('*')
	return b.String()
}

// client returns a Client on rc, closed when t ends.
var _, client = redistest.Clients(&addr, interlock.New)

// newClient returns a Client on the kind's server and the rueidis client
// under it.
func (s *suite) newClient(t *testing.T, opts ...interlock.Option) (*interlock.Client, rueidis.Client) {
	t.Helper()
	rc := redistest.NewClient(t, s.Addr)
	return client(t, rc, opts...), rc
}

// testCtx ends after a minute, or with the test.
func testCtx(t *testing.T) context.Context { return redistest.Context(t) }

// other returns ctx acting for a new explicit owner.
func other(ctx context.Context) context.Context {
	return interlock.WithOwner(ctx, interlock.NewOwnerID())
}

// must fails the test on err and returns v.
func must[T any](t *testing.T) func(v T, err error) T { return redistest.Must[T](t) }

// keys returns the keys that contain name, less the kind's Kept keys and,
// unless latches, the unlock latches.
func (s *suite) keys(t *testing.T, rc rueidis.Client, name string, latches bool) []string {
	t.Helper()
	ks, err := everyNode(context.Background(), rc, func(b rueidis.Builder) rueidis.Completed { return b.Keys().Pattern(like(name)).Build() })
	require.NoError(t, err)
	var kept []string
	if s.Kept != nil {
		kept = s.Kept(name)
	}
	return slices.DeleteFunc(ks, func(k string) bool {
		return slices.Contains(kept, k) || (!latches && strings.HasPrefix(k, latchPrefix))
	})
}

// state returns what the lock's keys hold (latches and Kept keys left
// out), by key, TTLs aside: the lock as its owners and waiters left it.
func (s *suite) state(t *testing.T, rc rueidis.Client, name string) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	for _, k := range s.keys(t, rc, name, false) {
		typ, err := rc.Do(ctx, rc.B().Type().Key(k).Build()).ToString()
		require.NoError(t, err)
		var v any
		switch typ {
		case "none":
			continue
		case "hash":
			v, err = rc.Do(ctx, rc.B().Hgetall().Key(k).Build()).AsStrMap()
		case "list":
			v, err = rc.Do(ctx, rc.B().Lrange().Key(k).Start(0).Stop(-1).Build()).AsStrSlice()
		case "zset":
			v, err = rc.Do(ctx, rc.B().Zrange().Key(k).Min("0").Max("-1").Withscores().Build()).AsZScores()
		case "string":
			v, err = rc.Do(ctx, rc.B().Get().Key(k).Build()).ToString()
		default:
			v = "a " + typ
		}
		if rueidis.IsRedisNil(err) {
			continue // it expired between TYPE and the read
		}
		require.NoError(t, err, k)
		out[k] = fmt.Sprint(v) // fmt sorts maps
	}
	return out
}

// everyNode sends the command build makes to every node of rc (the one
// server of a standalone client) and returns the replies' strings, each
// once: keyless commands see one node's keys and channels only.
func everyNode(ctx context.Context, rc rueidis.Client, build func(rueidis.Builder) rueidis.Completed) ([]string, error) {
	var out []string
	for _, n := range rc.Nodes() {
		v, err := n.Do(ctx, build(n.B())).AsStrSlice()
		if err != nil {
			return nil, err
		}
		out = append(out, v...)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// exists reports whether any state of the lock is left.
func (s *suite) exists(t *testing.T, rc rueidis.Client, name string) bool {
	t.Helper()
	return len(s.state(t, rc, name)) > 0
}

// nothingLeft asserts that no key (latches included, once deleted), no
// subscription and no hold of the lock remain.
func (s *suite) nothingLeft(t *testing.T, c *interlock.Client, rc rueidis.Client, name string) {
	t.Helper()
	sharded := redistest.FeaturesOf(t, rc).ShardedPubSub()
	require.Eventually(t, func() bool {
		chans, err := everyNode(context.Background(), rc, func(b rueidis.Builder) rueidis.Completed {
			return b.PubsubChannels().Pattern(like(name)).Build()
		})
		var shard []string
		var serr error
		if sharded { // Redis 6.x has no sharded channels to list
			shard, serr = everyNode(context.Background(), rc, func(b rueidis.Builder) rueidis.Completed {
				return b.PubsubShardchannels().Pattern(like(name)).Build()
			})
		}
		return err == nil && serr == nil && len(chans)+len(shard) == 0 && c.Stats().Channels == 0 && len(s.keys(t, rc, name, true)) == 0
	}, 10*time.Second, 5*time.Millisecond, "keys or subscriptions left behind") // latency: the batched latch deletion, beside a CPU hog
	assert.Zero(t, c.Stats().Holds, "holds left behind")
}

// runs reports whether cmd runs one of scripts, by SHA or by source. Ask
// before sending: rueidis recycles a command once it was sent.
func runs(cmd rueidis.Completed, scripts ...*script.Script) bool {
	args := cmd.Commands()
	if len(args) < 2 {
		return false
	}
	for _, s := range scripts {
		if (args[0] == "EVALSHA" && args[1] == s.SHA1()) || (args[0] == "EVAL" && args[1] == s.Source()) {
			return true
		}
	}
	return false
}
