package demo

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
)

// The timeline of "interlock demo --chart": for each holder of a scene's
// lock, what the lock had left before it truly expired, and every
// acquisition, renewal and release with its outcome. The demo records its
// own acquisitions and releases as they return; a sampler reads the lock
// (its owner and PTTL) every chartSampleEvery meanwhile, and the renewals
// and expiries are read off those readings: a renewal is the owner's PTTL
// rising, an expiry the owner's key gone without its release.

// Kinds of a chartEvent.
const (
	chartAcquire = "acquire"
	chartRenew   = "renew"
	chartRelease = "release"
	chartExpire  = "expire"
)

const (
	// chartSampleEvery is how often the sampler reads the scene's lock.
	chartSampleEvery = 20 * time.Millisecond
	// chartRise is how many milliseconds the PTTL of one owner must rise
	// between two readings to count as a renewal. Without a write, the
	// server's PTTL of a key only falls; the margin is for its rounding.
	chartRise = 2
	// chartReadTimeout bounds the recorder's reading of the lock after an
	// acquisition.
	chartReadTimeout = time.Second
)

// chartEvent is one thing that happened to a holder's lock in a scene.
// Times are in milliseconds since the scene began.
type chartEvent struct {
	AtMS   int64  `json:"at_ms"`
	Holder string `json:"holder"` // "A", "B" or "C"
	Kind   string `json:"kind"`   // chartAcquire, chartRenew, chartRelease or chartExpire
	OK     bool   `json:"ok"`     // it succeeded; an expiry always does
	TTLMS  int64  `json:"ttl_ms"` // what the holder's lock had left after it; 0: none
	Note   string `json:"note,omitempty"`
}

// chartNote is something a holder did besides taking, renewing or
// releasing the lock: a write to the ledger, a signal it was sent.
type chartNote struct {
	AtMS   int64  `json:"at_ms"`
	Holder string `json:"holder"`
	Text   string `json:"text"`
}

// chartScene is the timeline of one scene.
type chartScene struct {
	Title   string       `json:"title"`
	Verdict string       `json:"verdict,omitempty"` // the first sentence of the scene's verdict
	EndMS   int64        `json:"end_ms"`            // how long the scene ran
	Events  []chartEvent `json:"events"`            // in time order
	Notes   []chartNote  `json:"notes,omitempty"`   // in time order
}

// chartRecorder collects the timeline of the demo's scenes as they run. A
// nil *chartRecorder records nothing (the demo without --chart).
type chartRecorder struct {
	rc     rueidis.Client
	scenes []chartScene
	cur    *sceneRecorder
}

// sceneRecorder records one scene. Its sampler goroutine is started by
// begin and joined by end.
type sceneRecorder struct {
	lock  string
	title string
	start time.Time
	stop  context.CancelFunc
	done  chan struct{}

	mu       sync.Mutex
	events   []chartEvent      // acquisitions, releases and failed renewals, as the demo saw them
	notes    []chartNote       // in time order
	readings []lockReading     // the sampler's, in order
	owners   map[string]string // lock hash field (owner) -> holder
}

// lockReading is what one reading of a lock found.
type lockReading struct {
	atMS   int64    // when the reply came, since the scene began
	ttlMS  int64    // PTTL; negative: no key (-2) or no expiry (-1)
	fields []string // the lock hash's fields: its owners
}

// newChartRecorder returns a recorder that reads the scenes' locks with rc.
func newChartRecorder(rc rueidis.Client) *chartRecorder {
	return &chartRecorder{rc: rc}
}

// begin starts the timeline of the scene n has just begun, on lock, with
// a sampler of that lock. end ends it.
func (r *chartRecorder) begin(n *narrator, lock string) {
	if r == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &sceneRecorder{
		lock: lock, title: n.title, start: n.start, stop: cancel,
		done: make(chan struct{}), owners: map[string]string{},
	}
	r.cur = s
	go s.sample(ctx, r.rc)
}

// end stops the current scene's sampler and adds its timeline, with the
// verdict n told, if it told one.
func (r *chartRecorder) end(n *narrator) {
	if r == nil || r.cur == nil {
		return
	}
	s := r.cur
	r.cur = nil
	s.stop()
	<-s.done
	r.scenes = append(r.scenes, chartScene{
		Title: s.title, Verdict: firstSentence(n.verdictText), EndMS: s.since(),
		Events: deriveEvents(s.events, s.readings, s.owners), Notes: s.notes,
	})
}

// acquired records that who has just acquired the scene's lock: it reads
// the lock for its TTL and for who's owner field, which tells the
// sampler's readings of who's hold apart from others'.
func (r *chartRecorder) acquired(ctx context.Context, who, note string) {
	if r == nil || r.cur == nil {
		return
	}
	s := r.cur
	at := s.since()
	ctx, cancel := context.WithTimeout(ctx, chartReadTimeout)
	defer cancel()
	rd, ok := readLock(ctx, r.rc, s.lock, s.start)
	ttl := max(rd.ttlMS, 0)
	s.mu.Lock()
	defer s.mu.Unlock()
	if ok && rd.ttlMS >= 0 {
		for _, f := range rd.fields {
			if _, known := s.owners[f]; !known {
				s.owners[f] = who
			}
		}
	}
	s.events = append(s.events, chartEvent{AtMS: at, Holder: who, Kind: chartAcquire, OK: true, TTLMS: ttl, Note: note})
}

// released records who's release of the lock, which returned err.
func (r *chartRecorder) released(who string, err error) {
	note := ""
	switch {
	case errors.Is(err, interlock.ErrNotHeld):
		note = "not held"
	case err != nil:
		note = "error"
	}
	r.add(chartEvent{Holder: who, Kind: chartRelease, OK: err == nil, Note: note})
}

// renewFailed records that a renewal of who's hold failed.
func (r *chartRecorder) renewFailed(who, note string) {
	r.add(chartEvent{Holder: who, Kind: chartRenew, OK: false, Note: note})
}

// note records something who did, such as writing to the ledger.
func (r *chartRecorder) note(who, text string) {
	if r == nil || r.cur == nil {
		return
	}
	s := r.cur
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notes = append(s.notes, chartNote{AtMS: s.since(), Holder: who, Text: text})
}

// add records e, stamped now.
func (r *chartRecorder) add(e chartEvent) {
	if r == nil || r.cur == nil {
		return
	}
	s := r.cur
	s.mu.Lock()
	defer s.mu.Unlock()
	e.AtMS = s.since()
	s.events = append(s.events, e)
}

// since returns the milliseconds since the scene began.
func (s *sceneRecorder) since() int64 { return time.Since(s.start).Milliseconds() }

// sample reads the lock every chartSampleEvery until ctx ends.
func (s *sceneRecorder) sample(ctx context.Context, rc rueidis.Client) {
	defer close(s.done)
	t := time.NewTicker(chartSampleEvery)
	defer t.Stop()
	for {
		if rd, ok := readLock(ctx, rc, s.lock, s.start); ok {
			s.mu.Lock()
			s.readings = append(s.readings, rd)
			s.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// readLock reads lock's owners and PTTL. It reads the owners before and
// after the PTTL, in one pipeline, and reports a reading only when both
// agree: then the PTTL is that owner's.
func readLock(ctx context.Context, rc rueidis.Client, lock string, start time.Time) (lockReading, bool) {
	res := rc.DoMulti(ctx,
		rc.B().Hkeys().Key(lock).Build(),
		rc.B().Pttl().Key(lock).Build(),
		rc.B().Hkeys().Key(lock).Build())
	at := time.Since(start).Milliseconds()
	before, err1 := res[0].AsStrSlice()
	ttl, err2 := res[1].AsInt64()
	after, err3 := res[2].AsStrSlice()
	if err1 != nil || err2 != nil || err3 != nil || !slices.Equal(before, after) {
		return lockReading{}, false
	}
	return lockReading{atMS: at, ttlMS: ttl, fields: after}, true
}

// deriveEvents returns a scene's events: those the demo saw (seen), and
// the renewals and expiries the sampler's readings (in the order taken)
// show, given which owner field is which holder's. A renewal is a reading
// of a holder whose PTTL is over chartRise above the one before it (the
// server's PTTL of a key rises only when the key's expiry is set); an
// expiry is a hold whose key went away (or to another owner) without the
// holder's successful release, at the deadline its last reading gave.
func deriveEvents(seen []chartEvent, readings []lockReading, owners map[string]string) []chartEvent {
	events := slices.Clone(seen)
	holderOf := func(rd lockReading) string {
		if rd.ttlMS < 0 {
			return ""
		}
		for _, f := range rd.fields {
			if h, ok := owners[f]; ok {
				return h
			}
		}
		return ""
	}
	released := func(who string, from, to int64) bool {
		return slices.ContainsFunc(seen, func(e chartEvent) bool {
			return e.Holder == who && e.Kind == chartRelease && e.OK && e.AtMS >= from && e.AtMS <= to
		})
	}
	var who string              // the holder the last reading found, if any
	var first, last lockReading // the first and the last reading of who's hold
	for _, rd := range readings {
		h := holderOf(rd)
		if h != who {
			if who != "" {
				deadline := last.atMS + last.ttlMS
				if !released(who, first.atMS, deadline+chartRise) {
					// By this reading, and by the next holder's acquisition,
					// the key had expired.
					at := min(deadline, rd.atMS)
					if i := slices.IndexFunc(seen, func(e chartEvent) bool {
						return e.Kind == chartAcquire && e.OK && e.Holder != who && e.AtMS >= first.atMS
					}); i >= 0 {
						at = min(at, seen[i].AtMS)
					}
					events = append(events, chartEvent{AtMS: at, Holder: who, Kind: chartExpire, OK: true})
				}
			}
			who, first, last = h, rd, rd
			continue
		}
		if h != "" && rd.ttlMS > last.ttlMS+chartRise {
			events = append(events, chartEvent{AtMS: rd.atMS, Holder: h, Kind: chartRenew, OK: true, TTLMS: rd.ttlMS})
		}
		last = rd
	}
	slices.SortStableFunc(events, func(a, b chartEvent) int { return cmp.Compare(a.AtMS, b.AtMS) })
	return events
}

// msDuration converts milliseconds to a duration.
func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

// firstSentence returns s up to the end of its first sentence.
func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}
