//go:build unix

package renewal_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/renewal"
)

// cpu returns the CPU time this process has used.
func cpu(t *testing.T) time.Duration {
	var ru syscall.Rusage
	require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// A failing hold whose unlock is in flight past its validity is the
// unlock's to settle: the Scheduler must not spin on it meanwhile.
func TestFailingHoldBeingReleasedDoesNotSpin(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	const lease = 300 * time.Millisecond
	s := newScheduler(t, hanging{rc}, renewal.Config{Lease: lease, BatchSize: 100})
	key := "renew:spin:" + t.Name()
	require.NoError(t, s.Hold(key, "me:1", task, 0, time.Now()))
	time.Sleep(lease * 5 / 6) // the first tick (at lease/3) has failed: the hold is failing
	_, held, end := s.Release(key, "me:1")
	require.True(t, held)
	defer end(renewal.Unknown)
	time.Sleep(lease) // past its validity, the unlock still in flight
	before := cpu(t)
	time.Sleep(500 * time.Millisecond)
	assert.Less(t, cpu(t)-before, 200*time.Millisecond, "the Scheduler spins")
}
