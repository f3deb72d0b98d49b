package reliability

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// T0's throughput check: each run is compared with the last green run on
// the same machine, and a nightly run fails when it is more than 20 %
// slower (summed over the kinds, per name set). The PR gate's runs are too
// short to judge on a shared machine (they moved by 35 % with a neighbour
// busy), so there the comparison is only logged.
// The numbers live outside the repository, per machine, in
// $INTERLOCK_T0_BASELINE (default: the user cache dir's
// interlock/t00-baseline.json); INTERLOCK_T0_BASELINE=off skips the check.
// A run that passes replaces them. Keys separate the tier and the race
// detector, which change the numbers far more than 20 %.

const t00MaxDrop = 0.20

type t00Trend struct {
	mu   sync.Mutex
	path string
	last map[string]float64 // the last green run
	now  map[string]float64 // this run
	// cycles and seconds summed over the kinds, per name set
	cycles, seconds map[string]float64
	failed          bool
}

func newT00Trend(t *testing.T) *t00Trend {
	tr := &t00Trend{now: map[string]float64{}, cycles: map[string]float64{}, seconds: map[string]float64{}}
	tr.path = os.Getenv("INTERLOCK_T0_BASELINE")
	if tr.path == "off" {
		return tr
	}
	if tr.path == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			t.Logf("T0 throughput trend: no cache dir (%v); not compared", err)
			tr.path = "off"
			return tr
		}
		tr.path = filepath.Join(dir, "interlock", "t00-baseline.json")
	}
	b, err := os.ReadFile(tr.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		t.Logf("T0 throughput trend: no earlier green run in %s; this run sets it", tr.path)
	case err != nil:
		t.Fatalf("T0 throughput trend: %v", err)
	default:
		if err := json.Unmarshal(b, &tr.last); err != nil {
			t.Logf("T0 throughput trend: %s unreadable (%v); starting afresh", tr.path, err)
		}
	}
	return tr
}

// record adds one workload's cycles and time; check compares the totals.
func (tr *t00Trend) record(names int, cycles int64, elapsed float64) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	k := fmt.Sprintf("%s/race=%v/%d-name", tier(), raceEnabled, names)
	tr.cycles[k] += float64(cycles)
	tr.seconds[k] += elapsed
}

// check compares the throughput of each name set, over every kind (single
// workloads on a shared 2-core machine vary by more than 20 %; their sum
// varies far less), with the last green run.
func (tr *t00Trend) check(t *testing.T) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for k, c := range tr.cycles {
		rate := c / tr.seconds[k]
		tr.now[k] = rate
		prev, ok := tr.last[k]
		t.Logf("T0 %s, all kinds: %.0f cycles/s (last green run: %.0f)", k, rate, prev)
		if tr.path != "off" && isNightly() && ok && rate < (1-t00MaxDrop)*prev {
			tr.failed = true
			t.Errorf("T0 %s: %.0f cycles/s is %.0f%% below the last green run's %.0f (limit %.0f%%)",
				k, rate, 100*(1-rate/prev), prev, 100*t00MaxDrop)
		}
	}
}

// save keeps this run's numbers as the last green run, if it was green.
func (tr *t00Trend) save(t *testing.T) {
	tr.check(t)
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.path == "off" || tr.failed || t.Failed() {
		return
	}
	merged := map[string]float64{}
	for k, v := range tr.last {
		merged[k] = v
	}
	for k, v := range tr.now {
		merged[k] = v
	}
	b, err := json.MarshalIndent(merged, "", "  ")
	if err == nil {
		err = os.MkdirAll(filepath.Dir(tr.path), 0o755)
	}
	if err == nil {
		err = os.WriteFile(tr.path, b, 0o644)
	}
	if err != nil {
		t.Logf("T0 throughput trend: not saved: %v", err)
	}
}
