package main

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

type tableInfo struct {
	redisVersion string
	masters      int // the cluster's masters; 0 for one server
	rounds       int
	duration     time.Duration
	wall         time.Duration
}

// roundMetrics are the numbers of one library in one scenario in one round.
type roundMetrics struct {
	rate                     float64 // pairs (or acquisitions) per second
	p50, p99, max            time.Duration
	cmds                     float64       // client-side commands per pair; NaN if not counted
	scripts, executed        float64       // server side, per pair
	cpu                      time.Duration // client CPU per pair
	vsFloor, vsInterlock     float64       // rate ratios in the same round; NaN if absent
	vsFloor2                 float64       // over the second floor row
	counted, hasFloor, hasIL bool
	hasFloor2, cpuCounted    bool
}

func metricsOf(s Sample) roundMetrics {
	m := roundMetrics{counted: s.Counted}
	if s.Ops == 0 || s.Elapsed <= 0 {
		return m
	}
	m.rate = float64(s.Ops) / s.Elapsed.Seconds()
	lat := slices.Clone(s.Lat)
	slices.Sort(lat)
	q := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))] }
	m.p50, m.p99, m.max = q(0.5), q(0.99), lat[len(lat)-1]
	ops := float64(s.Ops)
	m.cmds = float64(s.Cmds) / ops
	m.scripts, m.executed = float64(s.Scripts)/ops, float64(s.Executed)/ops
	m.cpu, m.cpuCounted = s.CPU/time.Duration(s.Ops), s.CPUCounted
	return m
}

// printTable prints, per scenario, one row per library with the medians
// over the rounds. Ratios are taken per round (both cells of a ratio ran in
// the same round, minutes apart at most) and then their median is shown.
func printTable(w io.Writer, info tableInfo, scs []Scenario, libs []Library, res results) {
	where := "Redis " + info.redisVersion + " on loopback"
	if info.masters > 0 {
		fmt.Fprintf(w, "## Lock benchmark on a %d-master Redis Cluster\n\n", info.masters)
		where = fmt.Sprintf("Redis %s, a %d-master cluster on loopback", info.redisVersion, info.masters)
	} else {
		fmt.Fprintf(w, "## Lock benchmark\n\n")
	}
	fmt.Fprintf(w, "%s; %s; %s/%s, %d CPUs (GOMAXPROCS %d); %d rounds × %v per cell, interleaved; medians over rounds; %v of measuring.\n\n",
		where, runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0),
		info.rounds, info.duration, info.wall.Round(time.Second))
	if bi, ok := debug.ReadBuildInfo(); ok {
		var vs []string
		for _, d := range bi.Deps {
			switch d.Path {
			case "github.com/redis/rueidis", "github.com/redis/go-redis/v9", "github.com/go-redsync/redsync/v4", "github.com/bsm/redislock":
				vs = append(vs, d.Path+" "+d.Version)
			}
		}
		fmt.Fprintf(w, "Modules: %s.\n\n", strings.Join(vs, ", "))
	}
	ilName := "interlock"
	var floorNames, floor2Names []string
	for _, sc := range scs {
		byLib := res[sc.ID]
		floors := scenarioFloors(libs, byLib)
		floorName, floor2Name := "", ""
		if len(floors) > 0 {
			floorName = floors[0]
		}
		if len(floors) > 1 {
			floor2Name = floors[1]
		}
		if floorName != "" && !slices.Contains(floorNames, floorName) {
			floorNames = append(floorNames, floorName)
		}
		if floor2Name != "" && !slices.Contains(floor2Names, floor2Name) {
			floor2Names = append(floor2Names, floor2Name)
		}
		perRound := map[string][]roundMetrics{}
		for _, l := range libs {
			for round, cr := range byLib[l.Name()] {
				if cr.err != nil {
					continue
				}
				m := metricsOf(cr.s)
				if f := byLib[floorName]; round < len(f) && f[round].err == nil {
					if fm := metricsOf(f[round].s); fm.rate > 0 {
						m.vsFloor, m.hasFloor = m.rate/fm.rate, true
					}
				}
				if f := byLib[floor2Name]; round < len(f) && f[round].err == nil {
					if fm := metricsOf(f[round].s); fm.rate > 0 {
						m.vsFloor2, m.hasFloor2 = m.rate/fm.rate, true
					}
				}
				if il := byLib[ilName]; round < len(il) && il[round].err == nil {
					if im := metricsOf(il[round].s); im.rate > 0 {
						m.vsInterlock, m.hasIL = m.rate/im.rate, true
					}
				}
				perRound[l.Name()] = append(perRound[l.Name()], m)
			}
		}
		fmt.Fprintf(w, "### %s: %s\n\n", sc.ID, sc.Title)
		unit, lat := "pairs/s", "pair time"
		if sc.Wait {
			unit, lat = "acq/s", "wait"
		}
		fmt.Fprintf(w, "| Library | %s | p50 %s | p99 %s | max %s | cmds/op (client) | scripts/op (server) | executed/op (server) | client CPU/op | × floor | × floor 2 | × interlock |\n", unit, lat, lat, lat)
		fmt.Fprintf(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, l := range libs {
			name := l.Name()
			ms := perRound[name]
			if len(ms) == 0 {
				why := "n/a"
				for _, cr := range byLib[name] {
					if cr.err != nil && !errors.Is(cr.err, errNA) {
						why = "error: " + strings.ReplaceAll(cr.err.Error(), "|", "/")
						break
					}
				}
				if why == "n/a" && strings.HasPrefix(name, "floor:") {
					continue // floors only run where they are a floor
				}
				fmt.Fprintf(w, "| %s | %s |  |  |  |  |  |  |  |  |  |  |\n", name, why)
				continue
			}
			med := func(f func(roundMetrics) float64, ok func(roundMetrics) bool) (float64, bool) {
				var v []float64
				for _, m := range ms {
					if ok == nil || ok(m) {
						v = append(v, f(m))
					}
				}
				return median(v)
			}
			dur := func(f func(roundMetrics) time.Duration) string {
				x, _ := med(func(m roundMetrics) float64 { return float64(f(m)) }, nil)
				return fmtDur(time.Duration(x))
			}
			num := func(x float64, ok bool) string {
				if !ok {
					return "—"
				}
				return fmt.Sprintf("%.2f", x)
			}
			ratio := func(x float64, ok bool) string {
				if !ok {
					return "—"
				}
				return fmt.Sprintf("%.2f×", x)
			}
			rate, _ := med(func(m roundMetrics) float64 { return m.rate }, nil)
			mark := ""
			if n := len(ms); n < info.rounds {
				mark = fmt.Sprintf(" (%d/%d rounds ok)", n, info.rounds)
			}
			cpu := "—"
			if x, ok := med(func(m roundMetrics) float64 { return float64(m.cpu) }, func(m roundMetrics) bool { return m.cpuCounted }); ok {
				cpu = fmtDur(time.Duration(x))
			}
			fmt.Fprintf(w, "| %s%s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", name, mark,
				fmtInt(rate),
				dur(func(m roundMetrics) time.Duration { return m.p50 }),
				dur(func(m roundMetrics) time.Duration { return m.p99 }),
				dur(func(m roundMetrics) time.Duration { return m.max }),
				num(med(func(m roundMetrics) float64 { return m.cmds }, func(m roundMetrics) bool { return m.counted })),
				num(med(func(m roundMetrics) float64 { return m.scripts }, nil)),
				num(med(func(m roundMetrics) float64 { return m.executed }, nil)),
				cpu,
				ratio(med(func(m roundMetrics) float64 { return m.vsFloor }, func(m roundMetrics) bool { return m.hasFloor })),
				ratio(med(func(m roundMetrics) float64 { return m.vsFloor2 }, func(m roundMetrics) bool { return m.hasFloor2 })),
				ratio(med(func(m roundMetrics) float64 { return m.vsInterlock }, func(m roundMetrics) bool { return m.hasIL })),
			)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "cmds/op: commands the library's clients sent per pair, counted client-side (rueidis.Client wrapper incl. dedicated connections; go-redis hook). "+
		"scripts/op: EVAL/EVALSHA/FCALL per pair from INFO commandstats (always top level). "+
		"executed/op: every command Redis executed per pair, top level and inside scripts, from INFO commandstats, excluding INFO, HELLO and CLIENT. "+
		"client CPU/op: CPU time (user and system, every goroutine) of the process running the cell, per pair; the harness's own loop is in it for every row alike. "+
		"× floor: rate over the rate, in the same round, of the scenario's first floor row (%s); × floor 2: over its second floor row (%s); × interlock: over interlock's. n/a: the library has no such lock.\n",
		floorList(floorNames), floorList(floor2Names))
	if info.masters > 0 {
		fmt.Fprintf(w, "\nOn the cluster, scripts/op and executed/op sum INFO commandstats over its %d masters, and executed/op excludes CLUSTER as well (the clients' topology look-ups).\n", info.masters)
	}
}

// floorList names the floors that were denominators.
func floorList(names []string) string {
	if len(names) == 0 {
		return "no floor ran"
	}
	return strings.Join(names, "; ")
}

// scenarioFloors are the denominators of a scenario's "× floor" and "×
// floor 2" columns: the floor rows that ran in it, in row order.
func scenarioFloors(libs []Library, byLib map[string][]cellResult) []string {
	var names []string
	for _, l := range libs {
		if !strings.HasPrefix(l.Name(), "floor:") {
			continue
		}
		if slices.ContainsFunc(byLib[l.Name()], func(cr cellResult) bool { return cr.err == nil }) {
			names = append(names, l.Name())
		}
	}
	return names
}

func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "—"
	case d < time.Millisecond:
		return fmt.Sprintf("%d µs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

func fmtInt(x float64) string {
	s := fmt.Sprintf("%.0f", x)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// median of v (the mean of the middle two for an even count); false when
// v is empty.
func median(v []float64) (float64, bool) {
	if len(v) == 0 {
		return 0, false
	}
	v = slices.Clone(v)
	slices.Sort(v)
	x := v[len(v)/2]
	if len(v)%2 == 0 {
		x = (v[len(v)/2-1] + x) / 2
	}
	return x, true
}
