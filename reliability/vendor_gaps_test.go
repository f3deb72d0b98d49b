package reliability

// T22 (docs/reliability.md, hazard H20): vendor gaps. The proxy answers
// "-ERR unknown command" for WAIT, SUBSCRIBE or SSUBSCRIBE, as some
// managed or proxied Redis services do. For every kind, a contended Lock
// (a holder releases after t22Hold; the waiter must subscribe) and an
// uncontended one must succeed:
//
//   - WAIT refused: nothing changes unless safe mode is on (WAIT is only
//     sent then); in safe mode (interlock.WithReplicaAcks) Lock must fail
//     with an error wrapping interlock.ErrReplication that names WAIT, and
//     leave no key.
//   - SUBSCRIBE (classic mode) or SSUBSCRIBE (sharded mode) refused: no
//     release message can arrive, so the documented degradation is that
//     the waiter tries again when the holder's PTTL has passed; Lock must
//     not fail because it could not subscribe.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
)

const (
	// t22Lease is the watchdog lease: the PTTL a waiter falls back on.
	t22Lease = time.Second
	// t22Hold is how long the holder keeps the lock in a contended round.
	t22Hold = 100 * time.Millisecond
	// t22Rounds is how many contended rounds each kind runs.
	t22Rounds = 3
)

// t22WaitBound is how long a contended Lock may wait without pub/sub: the
// holder's PTTL, after which the waiter tries again, and a second for
// its wake-up. How soon it wakes states no safety property (a Lock that
// fails is judged apart, in every tier), and in the PR gate, where three
// packages share two cores under the race detector, the second gets
// latencyBound's headroom; the nightly tier keeps lease + 1 s.
func t22WaitBound() time.Duration { return t22Lease + latencyBound(time.Second) }

func TestT22VendorGaps(t *testing.T) {
	t.Parallel() // mostly waiting out holders' TTLs
	for _, gap := range []struct {
		command string
		opts    []interlock.Option
	}{
		{"WAIT", nil},
		{"SUBSCRIBE", []interlock.Option{interlock.WithPubSubMode(interlock.PubSubClassic)}},
		{"SSUBSCRIBE", []interlock.Option{interlock.WithPubSubMode(interlock.PubSubSharded)}},
	} {
		t.Run(gap.command, func(t *testing.T) {
			t.Parallel()
			opts := append([]interlock.Option{interlock.WithWatchdogTimeout(t22Lease)}, gap.opts...)
			e := netStart(t, opts...)
			if f := redistest.FeaturesOf(t, e.direct); gap.command == "SSUBSCRIBE" {
				// Sharded mode itself is refused before 7.0 (ErrInvalid).
				redistest.RequireFeature(t, f, f.ShardedPubSub(), "sharded pub/sub")
			}
			require.NoError(t, e.proxy.Reject(gap.command, fmt.Sprintf("ERR unknown command '%s'", strings.ToLower(gap.command))))
			// A second Client through the same proxy holds the lock.
			holder, err := interlock.New(e.rc, opts...)
			require.NoError(t, err)
			t.Cleanup(func() { _ = holder.Close() })
			for _, k := range netKinds {
				t22Kind(t, e, holder, k, gap.command)
			}
			if gap.command == "WAIT" {
				// Only safe mode sends WAIT.
				require.Zero(t, e.proxy.Stats().Rejected, "WAIT sent outside safe mode")
				t22SafeMode(t, e)
			}
			require.NotZero(t, e.proxy.Stats().Rejected, "the proxy refused no %s", gap.command)
		})
	}
}

// t22Kind runs an uncontended Lock and t22Rounds contended ones of kind k
// on e's Client, the lock held by holder.
func t22Kind(t *testing.T, e *netEnv, holder *interlock.Client, k netKind, command string) {
	name := fmt.Sprintf("t22:%s:%s", command, k.name)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var errs netErrTally
	var waits []time.Duration
	waiter := k.open(e.c, name)
	wctx := interlock.WithOwner(ctx, interlock.NewOwnerID())
	if err := waiter.Lock(wctx); err != nil {
		errs.add(err)
	} else if err := waiter.Unlock(wctx); err != nil {
		errs.add(err)
	}
	for range t22Rounds {
		hk := k
		if k.name == "rwread" {
			hk = netKindNamed("rwwrite") // readers wait only for a writer
		}
		h := hk.open(holder, name)
		hctx := interlock.WithOwner(ctx, interlock.NewOwnerID())
		require.NoError(t, h.Lock(hctx), "%s %s: the holder's Lock", command, k.name)
		released := make(chan error, 1)
		go func() {
			netWait(ctx, t22Hold)
			released <- h.Unlock(hctx)
		}()
		start := time.Now()
		err := waiter.Lock(wctx)
		waits = append(waits, time.Since(start))
		require.NoError(t, <-released, "%s %s: the holder's Unlock", command, k.name)
		if err != nil {
			errs.add(err)
			continue
		}
		if err := waiter.Unlock(wctx); err != nil {
			errs.add(err)
		}
	}
	t.Logf("T22 %s refused, %s: 1 uncontended and %d contended Locks, waits %v (hold %v, lease %v); errors: %v",
		command, k.name, t22Rounds, waits, t22Hold, t22Lease, &errs)
	assert.Empty(t, errs.order, "%s refused, %s: Lock or Unlock failed: %v", command, k.name, &errs)
	for _, w := range waits {
		assert.Less(t, w, t22WaitBound(), "%s refused, %s: a waiter took longer than the PTTL fallback", command, k.name)
	}
}

// t22SafeMode checks that safe mode refuses to acquire without WAIT: a
// clear error wrapping interlock.ErrReplication, and no key left.
func t22SafeMode(t *testing.T, e *netEnv) {
	safe, err := interlock.New(e.rc, interlock.WithWatchdogTimeout(t22Lease), interlock.WithReplicaAcks(1, 100*time.Millisecond))
	require.NoError(t, err)
	defer func() { _ = safe.Close() }()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var bad int
	for _, k := range netKinds {
		name := "t22:safe:" + k.name
		lk := k.open(safe, name)
		octx := interlock.WithOwner(ctx, interlock.NewOwnerID())
		err := lk.Lock(octx)
		switch {
		case err == nil:
			bad++
			t.Errorf("safe mode, %s: Lock succeeded although WAIT was refused", k.name)
			_ = lk.Unlock(octx)
		case !errors.Is(err, interlock.ErrReplication) || !strings.Contains(err.Error(), "WAIT"):
			bad++
			t.Errorf("safe mode, %s: Lock error %q does not wrap interlock.ErrReplication and name WAIT", k.name, err)
		default:
			t.Logf("T22 WAIT refused, safe mode, %s: Lock error %q", k.name, err)
		}
	}
	var left []string
	for _, key := range netKeysLeft(t, e.direct) {
		if strings.Contains(key, "t22:safe:") {
			left = append(left, key)
		}
	}
	assert.Empty(t, left, "safe mode left keys:\n%s", netDump(e.direct, left))
	t.Logf("T22 WAIT refused, safe mode: %d of %d kinds failed Lock with a clear ErrReplication error, %d keys left", len(netKinds)-bad, len(netKinds), len(left))
}
