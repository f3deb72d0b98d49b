//go:build unix

package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/cmd/interlock/internal/clitest"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/internal/redistest"
)

// With the server frozen (SIGSTOP), run terminates CMD when the hold's
// validity ends, within the watchdog timeout and one renewal interval, and
// returns soon after CMD ended: the unlock of a hold known lost waits for
// nothing from the server.
func TestRunServerFrozen(t *testing.T) {
	t.Parallel()
	const (
		lease    = 1500 * time.Millisecond
		interval = lease / 3
		// Tolerance on a loaded two-core machine, whose timers and
		// wake-ups come up to 600ms late (latency, not safety).
		late = time.Second
	)
	frozenSrv, err := redistest.Start()
	require.NoError(t, err)
	t.Cleanup(frozenSrv.Stop)
	cmd, pid := startRunOn(t, "redis://"+frozenSrv.Addr(), "--watchdog-timeout", lease.String(), clitest.LockName(t), "--",
		"sh", "-c", "echo $$; exec sleep 30")

	require.NoError(t, frozenSrv.Pause())
	frozen := time.Now()
	t.Cleanup(func() { _ = frozenSrv.Resume() })
	require.Eventually(t, func() bool { return clitest.Dead(pid) }, lease+interval+late+clitest.Slack, time.Millisecond, "CMD still runs")
	cmdEnded := time.Since(frozen)
	code, stderr := waitRun(t, cmd)
	returned := time.Since(frozen)
	t.Logf("frozen server, watchdog %v: CMD terminated %v after the freeze, run returned %v after CMD ended",
		lease, cmdEnded.Round(time.Millisecond), (returned - cmdEnded).Round(time.Millisecond))
	assert.Equal(t, exit.Lost, code, stderr)
	assert.Less(t, cmdEnded, lease+interval+late, "CMD terminated late")
	// Nothing like the 5s of an unlock's resends; two seconds for a
	// loaded machine (latency).
	assert.Less(t, returned-cmdEnded, 2*time.Second, "run waited after CMD ended")
}
