package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The scale scenarios (renewal, waiting) run on a cluster of their own and
// print a section of their own; main hands them the scale names it finds
// in -scenarios (see splitScale). Their knobs are flags of their own:
//
//	go run . -scenarios renewal,waiting
//	go run . -scenarios renewal -scale-locks 10000 -scale-java 0
var (
	scaleLocks     = flag.String("scale-locks", "10000,100000", "renewal: interlock runs, comma-separated counts, each with an optional @watchdog (100000@10s)")
	scaleJava      = flag.Int("scale-java", 10000, "renewal: locks the Redisson peer holds (0: no Java run)")
	scaleWaiters   = flag.Int("scale-waiters", 10000, "waiting: goroutines")
	scaleWaitLocks = flag.Int("scale-wait-locks", 1000, "waiting: locks they wait on")
	scaleWatchdog  = flag.Duration("scale-watchdog", 3*time.Second, "renewal: watchdog timeout (a tick every third)")
	scaleTicks     = flag.Int("scale-ticks", 5, "renewal: ticks measured per run")
)

// splitScale separates the scale scenarios from the table scenarios of a
// -scenarios value.
func splitScale(scenarios string) (scale, rest []string) {
	for s := range strings.SplitSeq(scenarios, ",") {
		s = strings.TrimSpace(s)
		if isScaleScenario(strings.ToLower(s)) {
			scale = append(scale, strings.ToLower(s))
		} else if s != "" {
			rest = append(rest, s)
		}
	}
	return scale, rest
}

// scaleConfigFromFlags reads the -scale-* flags.
func scaleConfigFromFlags() (scaleConfig, error) {
	cfg := defaultScaleConfig()
	cfg.RenewalRuns = nil
	for f := range strings.SplitSeq(*scaleLocks, ",") {
		count, wd, _ := strings.Cut(strings.TrimSpace(f), "@")
		n, err := strconv.Atoi(count)
		var d time.Duration
		if err == nil && wd != "" {
			d, err = time.ParseDuration(wd)
		}
		if err != nil || n < 1 || d < 0 {
			return cfg, fmt.Errorf("bad -scale-locks %q", *scaleLocks)
		}
		cfg.RenewalRuns = append(cfg.RenewalRuns, renewalRun{n, d})
	}
	cfg.JavaCount, cfg.Waiters, cfg.WaitLocks, cfg.Ticks = *scaleJava, *scaleWaiters, *scaleWaitLocks, *scaleTicks
	if *scaleWatchdog < 100*time.Millisecond {
		return cfg, fmt.Errorf("bad -scale-watchdog %v", *scaleWatchdog)
	}
	cfg.Watchdog = *scaleWatchdog
	if cfg.JavaCount < 0 || cfg.Ticks < 1 || cfg.WaitLocks < 1 || cfg.Waiters < 1 {
		return cfg, fmt.Errorf("-scale-java must be >= 0 and -scale-ticks, -scale-waiters, -scale-wait-locks >= 1")
	}
	return cfg, nil
}
