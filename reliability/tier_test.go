package reliability

import (
	"flag"
	"os"
	"testing"
	"time"
)

// The tier decides the size of every test: the PR gate keeps the whole
// package within a few minutes on two cores, the nightly tier runs the
// sizes of docs/reliability.md.
var tierFlag = flag.String("tier", "", `"pr" (the default), "nightly", or "soak" (T23 only); INTERLOCK_TIER sets the default`)

const (
	tierPR      = "pr"
	tierNightly = "nightly"
)

// tier returns the selected tier.
func tier() string {
	t := *tierFlag
	if t == "" {
		t = os.Getenv("INTERLOCK_TIER")
	}
	if t == tierNightly {
		return tierNightly
	}
	return tierPR
}

// isNightly reports whether the nightly tier was selected.
func isNightly() bool { return tier() == tierNightly }

// sized returns pr in the PR gate and nightly in the nightly tier.
func sized(pr, nightly int) int {
	if isNightly() {
		return nightly
	}
	return pr
}

// nightlyOnly skips t outside the nightly tier.
func nightlyOnly(t *testing.T) {
	t.Helper()
	if !isNightly() {
		t.Skip("nightly tier only (-tier=nightly)")
	}
}

// prHeadroom multiplies, in the PR gate, a latency bound that states no
// safety property (a p99, how soon a waiter wakes, how long a call takes):
// there three packages share two cores under the race detector, and a
// wake-up can take several times what it takes alone. The nightly tier
// runs alone and keeps the bound as docs/reliability.md states it. A
// bound that states a safety property (no overlap, nothing lost, never
// believed valid after expiry) is never stretched.
const prHeadroom = 5

// latencyBound returns bound in the nightly tier and prHeadroom times it
// in the PR gate.
func latencyBound(bound time.Duration) time.Duration {
	if isNightly() {
		return bound
	}
	return prHeadroom * bound
}
