package renewal_test

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/renewal"
)

// TestSlottedRenewal renews holds on 16 distinct slots, in chunks of 4,
// through a client that runs the slot-enforcing endpoint as a standalone
// server: every round is refused with CROSSSLOT unless it groups the
// holds by slot, and every round's groups go in one DoMulti.
func TestSlottedRenewal(t *testing.T) {
	rc := &counting{Client: redistest.NewClient(t, redistest.SharedSlotted(t))}
	require.NotEqual(t, rueidis.ClientModeCluster, rc.Mode())
	const lease = renewedLease
	var failed, lost atomic.Int64
	slots := map[uint16]bool{}
	var names []string
	for i := 0; len(names) < 16; i++ {
		name := "renew:slotted:" + strconv.Itoa(i) + ":" + t.Name()
		if !slots[keys.Slot(name)] {
			slots[keys.Slot(name)] = true
			names = append(names, name)
		}
	}
	for _, k := range names {
		hold(t, rc, k, "me:1", lease)
	}
	s := newScheduler(t, rc, renewal.Config{Lease: lease, BatchSize: 4, Observer: observer{failed: &failed, lost: &lost}})
	now := time.Now()
	for _, k := range names {
		require.NoError(t, s.Hold(k, "me:1", task, 0, now))
	}
	time.Sleep(3 * lease / 2) // past the lease: only renewals keep the keys
	for _, k := range names {
		p := pttl(t, rc, k)
		assert.Greater(t, p, int64(0), k)
		assert.LessOrEqual(t, p, lease.Milliseconds(), k)
	}
	assert.Zero(t, failed.Load(), "rounds with failures")
	assert.Zero(t, lost.Load(), "holds lost")
	assert.Equal(t, len(names), s.Len())
	assert.GreaterOrEqual(t, rc.calls.Load(), int64(2), "rounds")
	assert.EqualValues(t, len(names), rc.most.Load(), "one call per slot, all in one DoMulti")
}
