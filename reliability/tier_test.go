package reliability

import (
	"flag"
	"os"
	"testing"
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
