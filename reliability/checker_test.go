package reliability

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"
)

// The offline interval checker. It reads the oracle's event log after a
// run and rebuilds every critical section as an interval of CLOCK_MONOTONIC
// time, then reports any two sections of one resource whose intervals
// intersect, and any accepted write that did not advance the counter by
// exactly one (a lost update), independently of the oracle's counters.
//
// A section's interval starts at its accepted Enter. It ends at its Exit
// when none of its operations was refused; a section some of whose
// operations were refused for a stale token was fenced out at that moment,
// so it ends at its last accepted Enter or Write before the first refusal
// (a stale Read is harmless once the write after it is refused). A section
// with no Exit (its process was killed) ends at its last event.

// Event is one entry of the oracle's log.
type Event struct {
	ID      string // the stream entry id, in the order the oracle ran them
	Res     string
	Owner   string
	Section string
	Token   uint64
	Op      string // opEnter, opRead, opWrite or opExit
	OK      bool
	T       int64 // CLOCK_MONOTONIC, ns, taken by the worker before the call
	Value   string
}

// Events reads the whole event log, oldest first.
func (o *Oracle) Events(ctx context.Context) ([]Event, error) {
	var out []Event
	start := "-"
	for {
		entries, err := o.rc.Do(ctx, o.rc.B().Xrange().Key(oracleLog).Start(start).End("+").Count(5000).Build()).AsXRange()
		if err != nil {
			return nil, fmt.Errorf("oracle log: %w", err)
		}
		for _, e := range entries {
			ev := Event{ID: e.ID, Res: e.FieldValues["r"], Owner: e.FieldValues["o"], Section: e.FieldValues["s"],
				Op: e.FieldValues["op"], OK: e.FieldValues["ok"] == "1", Value: e.FieldValues["v"]}
			ev.Token, _ = strconv.ParseUint(e.FieldValues["k"], 10, 64)
			ev.T, _ = strconv.ParseInt(e.FieldValues["t"], 10, 64)
			out = append(out, ev)
		}
		if len(entries) < 5000 {
			return out, nil
		}
		start = "(" + entries[len(entries)-1].ID
	}
}

// Interval is one critical section as the checker rebuilt it.
type Interval struct {
	Res, Owner, Section string
	Token               uint64
	Start, End          int64 // CLOCK_MONOTONIC ns
	Fenced              bool  // some operation was refused for a stale token
	Open                bool  // no Exit was logged
}

func (iv Interval) String() string {
	s := fmt.Sprintf("%s (owner %s, token %d) [%d, %d] (%v)", iv.Section, iv.Owner, iv.Token,
		iv.Start, iv.End, time.Duration(iv.End-iv.Start))
	if iv.Fenced {
		s += " fenced out"
	}
	if iv.Open {
		s += " never exited"
	}
	return s
}

// Overlap is two critical sections of one resource that intersect.
type Overlap struct {
	Res         string
	First, Next Interval
}

func (o Overlap) String() string {
	return fmt.Sprintf("overlap on %s: %v and %v, for %v", o.Res, o.First, o.Next, time.Duration(min(o.First.End, o.Next.End)-o.Next.Start))
}

// LostUpdate is an accepted write whose value was not the previous
// accepted write's plus one.
type LostUpdate struct {
	Res, Section string
	Prev, Value  int64
}

func (l LostUpdate) String() string {
	return fmt.Sprintf("lost update on %s: section %s wrote %d after %d", l.Res, l.Section, l.Value, l.Prev)
}

// CheckReport is what checkIntervals found.
type CheckReport struct {
	Sections    int // critical sections rebuilt
	Fenced      int // of which fenced out
	Open        int // of which never exited
	Overlaps    []Overlap
	LostUpdates []LostUpdate
}

func (r CheckReport) String() string {
	return fmt.Sprintf("checker: %d sections (%d fenced out, %d never exited), %d overlaps, %d lost updates",
		r.Sections, r.Fenced, r.Open, len(r.Overlaps), len(r.LostUpdates))
}

// maxReported bounds the overlaps and lost updates a report lists.
const maxReported = 20

// checkIntervals rebuilds the critical sections of evs and checks them.
func checkIntervals(evs []Event) CheckReport {
	type state struct {
		iv       Interval
		entered  bool
		refused  bool
		lastGood int64 // last accepted Enter or Write before any refusal
		last     int64 // last event
		exit     int64
	}
	sections := map[string]*state{}
	var order []string
	lastValue := map[string]int64{}
	var rep CheckReport
	for _, ev := range evs {
		st := sections[ev.Section]
		if st == nil {
			st = &state{iv: Interval{Res: ev.Res, Owner: ev.Owner, Section: ev.Section, Token: ev.Token}}
			sections[ev.Section] = st
			order = append(order, ev.Section)
		}
		st.last = max(st.last, ev.T)
		if !ev.OK {
			st.refused = true
			continue
		}
		switch ev.Op {
		case opEnter:
			st.entered = true
			st.iv.Start = ev.T
			if !st.refused {
				st.lastGood = ev.T
			}
		case opWrite:
			if !st.refused {
				st.lastGood = ev.T
			}
			v, _ := strconv.ParseInt(ev.Value, 10, 64)
			if prev := lastValue[ev.Res]; v != prev+1 && len(rep.LostUpdates) < maxReported {
				rep.LostUpdates = append(rep.LostUpdates, LostUpdate{Res: ev.Res, Section: ev.Section, Prev: prev, Value: v})
			}
			lastValue[ev.Res] = v
		case opExit:
			st.exit = ev.T
		}
	}
	byRes := map[string][]Interval{}
	for _, id := range order {
		st := sections[id]
		if !st.entered {
			continue
		}
		iv := st.iv
		switch {
		case st.refused:
			iv.End, iv.Fenced = st.lastGood, true
			rep.Fenced++
		case st.exit != 0:
			iv.End = st.exit
		default:
			iv.End, iv.Open = st.last, true
		}
		if iv.Open {
			rep.Open++
		}
		rep.Sections++
		byRes[iv.Res] = append(byRes[iv.Res], iv)
	}
	resNames := make([]string, 0, len(byRes))
	for r := range byRes {
		resNames = append(resNames, r)
	}
	sort.Strings(resNames)
	for _, r := range resNames {
		ivs := byRes[r]
		sort.Slice(ivs, func(i, j int) bool { return ivs[i].Start < ivs[j].Start })
		// Sweep: the section reaching furthest so far overlaps any later
		// one that starts before it ends.
		var reach Interval
		for i, iv := range ivs {
			if i > 0 && iv.Start < reach.End && len(rep.Overlaps) < maxReported {
				rep.Overlaps = append(rep.Overlaps, Overlap{Res: r, First: reach, Next: iv})
			}
			if i == 0 || iv.End > reach.End {
				reach = iv
			}
		}
	}
	return rep
}
