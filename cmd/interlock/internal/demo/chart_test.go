package demo

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A renewal is a rise of the holder's PTTL between readings; an expiry is
// the holder's key gone without its release, at the deadline its last
// reading gave; a released hold does not expire.
func TestDeriveEvents(t *testing.T) {
	t.Parallel()
	owners := map[string]string{"a:1": "A", "b:1": "B"}
	seen := []chartEvent{
		{AtMS: 2, Holder: "A", Kind: chartAcquire, OK: true, TTLMS: 1000},
		{AtMS: 1500, Holder: "B", Kind: chartAcquire, OK: true, TTLMS: 1000},
		{AtMS: 1700, Holder: "B", Kind: chartRelease, OK: true},
		{AtMS: 1800, Holder: "A", Kind: chartRelease, OK: false, Note: "not held"},
	}
	a := func(at, ttl int64) lockReading { return lockReading{atMS: at, ttlMS: ttl, fields: []string{"a:1"}} }
	b := func(at, ttl int64) lockReading { return lockReading{atMS: at, ttlMS: ttl, fields: []string{"b:1"}} }
	gone := func(at int64) lockReading { return lockReading{atMS: at, ttlMS: -2} }
	readings := []lockReading{
		gone(0), a(20, 982), a(40, 962),
		a(340, 999),              // renewed
		a(360, 979), a(380, 960), // jitter, not a renewal
		a(390, 961),
		a(1300, 51), gone(1360), // expired at 1351
		b(1520, 980), b(1680, 820), gone(1700), // released
	}
	got := deriveEvents(seen, readings, owners)
	want := []chartEvent{
		{AtMS: 2, Holder: "A", Kind: chartAcquire, OK: true, TTLMS: 1000},
		{AtMS: 340, Holder: "A", Kind: chartRenew, OK: true, TTLMS: 999},
		{AtMS: 1351, Holder: "A", Kind: chartExpire, OK: true},
		{AtMS: 1500, Holder: "B", Kind: chartAcquire, OK: true, TTLMS: 1000},
		{AtMS: 1700, Holder: "B", Kind: chartRelease, OK: true},
		{AtMS: 1800, Holder: "A", Kind: chartRelease, OK: false, Note: "not held"},
	}
	assert.Equal(t, want, got)

	// A hold still read at the scene's end has not expired; an owner
	// nobody claimed is nobody's.
	got = deriveEvents(seen[:1], []lockReading{a(20, 980), {atMS: 40, ttlMS: 900, fields: []string{"x:1"}}, a(60, 940)}, owners)
	assert.Equal(t, []chartEvent{seen[0], {AtMS: 40, Holder: "A", Kind: chartExpire, OK: true}}, got,
		"a reading of another owner ends A's hold")
	got = deriveEvents(seen[:1], []lockReading{a(20, 980), a(40, 960)}, owners)
	assert.Equal(t, seen[:1], got)
}

// The chart is deterministic, and shows every scene's events: one band
// per holder, a flag of the outcome's colour per acquisition, renewal and
// release, a mark per expiry, every note.
func TestRenderChart(t *testing.T) {
	t.Parallel()
	scenes := sampleScenes()
	svg, err := renderChart(scenes)
	require.NoError(t, err)
	again, err := renderChart(sampleScenes())
	require.NoError(t, err)
	assert.Equal(t, string(svg), string(again), "the same events draw the same chart")
	checkChart(t, svg, scenes)

	// A hold still on at the scene's end is drawn to the end; one that
	// runs down before its next event stays at zero.
	c := chart{scenes: scenes}
	c.scale()
	y := func(ttl float64) float64 { return 100 - 50*ttl }
	d, holds := c.band([]chartEvent{{AtMS: 0, Kind: chartAcquire, OK: true, TTLMS: 500}, {AtMS: 1000, Kind: chartRenew, OK: true, TTLMS: 1000}}, 1.5, y)
	assert.Equal(t, 1, holds)
	x := func(t float64) string { return strconv.FormatFloat(c.x(t), 'f', 1, 64) }
	assert.Equal(t, "M"+x(0)+" 100.0 L"+x(0)+" 75.0 L"+x(0.5)+" 100.0 L"+x(1)+" 100.0 L"+x(1)+" 50.0 L"+x(1.5)+" 75.0 L"+x(1.5)+" 100.0 Z", d)
}

// checkDemoChart checks the chart a run of "interlock demo --chart file"
// wrote, which printed stdout: the picture shows the events it embeds,
// those events tell each scene's story, and they are the events the demo
// narrated.
func checkDemoChart(t *testing.T, file, stdout string) {
	t.Helper()
	svg, err := os.ReadFile(file)
	require.NoError(t, err)
	scenes := chartMetadata(t, svg)
	require.Len(t, scenes, 4, "four scenes")
	checkChart(t, svg, scenes)
	checkStory(t, scenes)
	checkNarration(t, scenes, stdout)
}

// svgNode is an element of a parsed SVG.
type svgNode struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Nodes   []svgNode  `xml:",any"`
	Text    string     `xml:",chardata"`
}

// attr returns the value of n's attribute name, or "".
func (n *svgNode) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// all returns n's descendants with attribute name, in document order.
func (n *svgNode) all(name string) []*svgNode {
	var found []*svgNode
	for i := range n.Nodes {
		c := &n.Nodes[i]
		if c.attr(name) != "" {
			found = append(found, c)
		}
		found = append(found, c.all(name)...)
	}
	return found
}

// parseSVG parses svg with encoding/xml.
func parseSVG(t *testing.T, svg []byte) *svgNode {
	t.Helper()
	var root svgNode
	require.NoError(t, xml.Unmarshal(svg, &root), "the chart is well-formed XML")
	require.Equal(t, "svg", root.XMLName.Local)
	require.Equal(t, "http://www.w3.org/2000/svg", root.XMLName.Space)
	return &root
}

// chartMetadata returns the scenes a chart embeds.
func chartMetadata(t *testing.T, svg []byte) []chartScene {
	t.Helper()
	root := parseSVG(t, svg)
	for _, n := range root.Nodes {
		if n.XMLName.Local == "metadata" {
			var scenes []chartScene
			require.NoError(t, json.Unmarshal([]byte(n.Text), &scenes))
			return scenes
		}
	}
	require.Fail(t, "the chart has no metadata")
	return nil
}

// checkChart checks that svg draws scenes: it embeds them, and each scene's
// panel has its title, a band per holder that held the lock (with as many
// holds as acquisitions), a flag per acquisition, renewal and release, in
// the colour of its outcome, an expiry mark per expiry and every note.
func checkChart(t *testing.T, svg []byte, scenes []chartScene) {
	t.Helper()
	root := parseSVG(t, svg)
	assert.Equal(t, scenes, chartMetadata(t, svg), "the chart embeds its events")
	assert.Equal(t, strconv.Itoa(len(scenes)), root.attr("data-scenes"))
	panels := root.all("data-scene")
	require.Len(t, panels, len(scenes), "one panel per scene")
	for i, s := range scenes {
		p := panels[i]
		where := fmt.Sprintf("scene %d", i+1)
		assert.Equal(t, strconv.Itoa(i+1), p.attr("data-scene"))
		assert.Equal(t, s.Title, p.attr("data-title"), where)
		assert.True(t, slices.ContainsFunc(p.Nodes, func(n svgNode) bool { return n.XMLName.Local == "text" && n.Text == s.Title }),
			"%s: its title is shown", where)

		// Bands: one per holder that acquired, in lane order.
		var wantBands, gotBands []string
		for _, h := range holdersOf(s) {
			acquired := 0
			for _, e := range s.Events {
				if e.Holder == h && e.Kind == chartAcquire && e.OK {
					acquired++
				}
			}
			if acquired > 0 {
				wantBands = append(wantBands, fmt.Sprintf("%s:%d", h, acquired))
			}
		}
		for _, n := range p.all("data-band") {
			gotBands = append(gotBands, n.attr("data-band")+":"+n.attr("data-holds"))
			assert.NotEmpty(t, n.attr("d"), "%s: band %s has an outline", where, n.attr("data-band"))
		}
		assert.Equal(t, wantBands, gotBands, "%s: bands", where)

		// Flags, expiries and notes, lane by lane in time order.
		var wantFlags, gotFlags, wantExpiries, gotExpiries, wantNotes, gotNotes []string
		for _, h := range holdersOf(s) {
			for _, e := range s.Events {
				switch {
				case e.Holder != h:
				case e.Kind == chartExpire:
					wantExpiries = append(wantExpiries, fmt.Sprintf("%s@%d", h, e.AtMS))
				default:
					colour := colourOK
					if !e.OK {
						colour = colourFailed
					}
					wantFlags = append(wantFlags, fmt.Sprintf("%s %s ok=%t @%d %s", h, e.Kind, e.OK, e.AtMS, colour))
				}
			}
			for _, n := range s.Notes {
				if n.Holder == h {
					wantNotes = append(wantNotes, fmt.Sprintf("%s@%d %s", h, n.AtMS, n.Text))
				}
			}
		}
		for _, f := range p.all("data-flag") {
			// The pennant (the filled path) is in the outcome's colour.
			var fill string
			for _, c := range f.Nodes {
				if c.XMLName.Local == "path" {
					fill = c.attr("fill")
				}
			}
			assert.Equal(t, f.attr("data-colour"), fill, "%s: a flag's pennant is in its colour", where)
			gotFlags = append(gotFlags, fmt.Sprintf("%s %s ok=%s @%s %s",
				f.attr("data-holder"), f.attr("data-flag"), f.attr("data-ok"), f.attr("data-at-ms"), fill))
		}
		for _, n := range p.all("data-expire") {
			gotExpiries = append(gotExpiries, n.attr("data-expire")+"@"+n.attr("data-at-ms"))
		}
		for _, n := range p.all("data-note") {
			var label string
			for _, c := range n.Nodes {
				if c.XMLName.Local == "text" {
					label = c.Text
				}
			}
			gotNotes = append(gotNotes, n.attr("data-note")+"@"+n.attr("data-at-ms")+" "+label)
		}
		assert.Equal(t, wantFlags, gotFlags, "%s: flags", where)
		assert.Equal(t, wantExpiries, gotExpiries, "%s: expiries", where)
		assert.Equal(t, wantNotes, gotNotes, "%s: notes", where)
	}
}

// checkStory checks that the demo's measured events tell each scene's
// story.
func checkStory(t *testing.T, scenes []chartScene) {
	t.Helper()
	// find returns the events of who of kind with outcome ok.
	find := func(s chartScene, who, kind string, ok bool) []chartEvent {
		var es []chartEvent
		for _, e := range s.Events {
			if e.Holder == who && e.Kind == kind && e.OK == ok {
				es = append(es, e)
			}
		}
		return es
	}
	// one returns the only such event.
	one := func(s chartScene, who, kind string, ok bool) chartEvent {
		es := find(s, who, kind, ok)
		if !assert.Len(t, es, 1, "%q: %s %s ok=%t; events: %+v", s.Title, who, kind, ok, s.Events) {
			return chartEvent{AtMS: -1}
		}
		return es[0]
	}
	const slack = 100 // ms: the sampler's and the demo's clocks
	// late is how far behind an event a reading of the lock may come on a
	// loaded machine (latency, not safety): a TTL read then has that much
	// less left, an expiry derived from it is off by as much.
	const late = 500 // ms
	for i, s := range scenes {
		assert.True(t, slices.IsSortedFunc(s.Events, func(a, b chartEvent) int { return int(a.AtMS - b.AtMS) }), "scene %d: in time order", i+1)
		for _, e := range s.Events {
			assert.True(t, e.AtMS >= 0 && e.AtMS <= s.EndMS, "scene %d: %+v within the scene", i+1, e)
		}
		assert.NotEmpty(t, s.Verdict, "scene %d has its verdict", i+1)
	}
	s1, s2, s3, s4 := scenes[0], scenes[1], scenes[2], scenes[3]

	// 1: A's fixed lease expires, without renewal, before B acquires; A's
	// release later fails.
	aLock := one(s1, "A", chartAcquire, true)
	assert.LessOrEqual(t, aLock.TTLMS, demoLease.Milliseconds(), "A's lease")
	assert.Greater(t, aLock.TTLMS, demoLease.Milliseconds()-late, "A's lease")
	assert.Empty(t, find(s1, "A", chartRenew, true), "a fixed lease is not renewed")
	aExpiry := one(s1, "A", chartExpire, true)
	assert.InDelta(t, aLock.AtMS+demoLease.Milliseconds(), aExpiry.AtMS, late, "A's lease runs out on time")
	assert.LessOrEqual(t, aExpiry.AtMS, one(s1, "B", chartAcquire, true).AtMS+slack)
	assert.Equal(t, "not held", one(s1, "A", chartRelease, false).Note)
	one(s1, "B", chartRelease, true)

	// 2: the watchdog renews A's lock until A releases it; nothing expires.
	one(s2, "A", chartAcquire, true)
	renewals := find(s2, "A", chartRenew, true)
	assert.GreaterOrEqual(t, len(renewals), 3, "A's lock is renewed, every %v", demoWatchdog/3)
	for _, r := range renewals {
		assert.LessOrEqual(t, r.TTLMS, demoWatchdog.Milliseconds(), "a renewal sets the TTL back to the watchdog timeout")
		assert.Greater(t, r.TTLMS, demoWatchdog.Milliseconds()-late, "a renewal sets the TTL back to the watchdog timeout")
	}
	aRelease := one(s2, "A", chartRelease, true)
	assert.GreaterOrEqual(t, aRelease.AtMS, demoSafeJob.Milliseconds(), "A holds the lock for its whole job")
	assert.LessOrEqual(t, aRelease.AtMS, one(s2, "B", chartAcquire, true).AtMS+slack)
	one(s2, "B", chartRelease, true)
	assert.Empty(t, find(s2, "A", chartExpire, true))

	// 3: C's lock is renewed until C is killed, then expires; B gets it.
	one(s3, "C", chartAcquire, true)
	assert.NotEmpty(t, find(s3, "C", chartRenew, true), "C's watchdog renews its lock")
	cExpiry := one(s3, "C", chartExpire, true)
	assert.Empty(t, find(s3, "C", chartRelease, true), "a killed holder releases nothing")
	assert.LessOrEqual(t, cExpiry.AtMS, one(s3, "B", chartAcquire, true).AtMS+slack)
	one(s3, "B", chartRelease, true)

	// 4: the paused C's lock expires; B gets it; C's renewal after it
	// resumes fails.
	one(s4, "C", chartAcquire, true)
	cExpiry = one(s4, "C", chartExpire, true)
	assert.LessOrEqual(t, cExpiry.AtMS, one(s4, "B", chartAcquire, true).AtMS+slack)
	for _, r := range find(s4, "C", chartRenew, false) {
		assert.Greater(t, r.AtMS, cExpiry.AtMS, "C's renewal fails after its lock expired")
	}
	one(s4, "B", chartRelease, true)
}

// checkNarration checks the events against the demo's narration: each
// "locked" line is an acquisition at its time, each failed unlock and
// renewal it tells of is a red flag.
func checkNarration(t *testing.T, scenes []chartScene, stdout string) {
	t.Helper()
	heading := regexp.MustCompile(`(?m)^([1-4])\. `)
	starts := heading.FindAllStringIndex(stdout, -1)
	require.Len(t, starts, len(scenes), "the narration has four scenes")
	locked := regexp.MustCompile(`(?m)^\s+\+(\d+\.\d+)s\s+([ABC])\s+(?:\(pid \d+\) )?locked `)
	for i, s := range scenes {
		end := len(stdout)
		if i+1 < len(starts) {
			end = starts[i+1][0]
		}
		text := stdout[starts[i][0]:end]
		assert.True(t, strings.HasPrefix(text, s.Title), "scene %d is titled as narrated", i+1)
		var acquired []chartEvent
		for _, e := range s.Events {
			if e.Kind == chartAcquire {
				acquired = append(acquired, e)
			}
		}
		lines := locked.FindAllStringSubmatch(text, -1)
		if !assert.Len(t, lines, len(acquired), "scene %d: one acquisition per \"locked\" line", i+1) {
			continue
		}
		for j, m := range lines {
			at, err := strconv.ParseFloat(m[1], 64)
			require.NoError(t, err)
			assert.Equal(t, m[2], acquired[j].Holder, "scene %d", i+1)
			// The narration follows the chart's read of the lock, which a
			// loaded machine may delay (latency).
			assert.InDelta(t, at*1000, acquired[j].AtMS, 1000, "scene %d: %s acquired when narrated", i+1, m[2])
		}
		failed := 0
		for _, e := range s.Events {
			if !e.OK {
				failed++
			}
		}
		assert.Equal(t, strings.Count(text, "its unlock fails")+strings.Count(text, "its renewal fails"), failed,
			"scene %d: one red flag per failure told", i+1)
	}
}

// sampleScenes returns a made-up timeline shaped like the demo's.
func sampleScenes() []chartScene {
	acq := func(at int64, who string, ttl int64, note string) chartEvent {
		return chartEvent{AtMS: at, Holder: who, Kind: chartAcquire, OK: true, TTLMS: ttl, Note: note}
	}
	renew := func(at int64, who string, ttl int64) chartEvent {
		return chartEvent{AtMS: at, Holder: who, Kind: chartRenew, OK: true, TTLMS: ttl}
	}
	rel := func(at int64, who string, ok bool, note string) chartEvent {
		return chartEvent{AtMS: at, Holder: who, Kind: chartRelease, OK: ok, Note: note}
	}
	exp := func(at int64, who string) chartEvent {
		return chartEvent{AtMS: at, Holder: who, Kind: chartExpire, OK: true}
	}
	watchdog := []chartEvent{acq(3, "A", 1000, "watchdog")}
	for at := int64(336); at < 2500; at += 333 {
		watchdog = append(watchdog, renew(at, "A", 998))
	}
	watchdog = append(watchdog, rel(2505, "A", true, ""), acq(2507, "B", 999, ""), rel(2509, "B", true, ""))
	return []chartScene{{
		Title:   "1. A fixed lease shorter than the job, without a watchdog",
		Verdict: "DOUBLE PROCESSING: order-42 was processed twice (ledger: [B A]).",
		EndMS:   2012,
		Events: []chartEvent{acq(5, "A", 1000, "lease 1.00s"), exp(1005, "A"), acq(1040, "B", 1000, ""),
			renew(1375, "B", 999), rel(1547, "B", true, ""), rel(2007, "A", false, "not held")},
		Notes: []chartNote{{AtMS: 1545, Holder: "B", Text: "writes the ledger"}, {AtMS: 2006, Holder: "A", Text: "writes the ledger too"}},
	}, {
		Title:   "2. The same job with the watchdog",
		Verdict: "SAFE: the lock lived 2.50s, 2.5 watchdog timeouts, because A was alive to renew it.",
		EndMS:   2511,
		Events:  watchdog,
		Notes:   []chartNote{{AtMS: 2504, Holder: "A", Text: "writes the ledger"}},
	}, {
		Title:   "3. A holder that crashes",
		Verdict: "NO DEADLOCK: the dead holder's lock expired 0.84s after the crash, within the 1.00s",
		EndMS:   2930,
		Events: []chartEvent{acq(80, "C", 995, "watchdog"), renew(413, "C", 999), renew(746, "C", 1000),
			renew(1079, "C", 999), renew(1412, "C", 1000), exp(2412, "C"), acq(2420, "B", 998, ""),
			rel(2926, "B", true, "")},
		Notes: []chartNote{{AtMS: 1580, Holder: "C", Text: "killed (SIGKILL)"}, {AtMS: 2925, Holder: "B", Text: "writes the ledger"}},
	}, {
		Title:   "4. A holder that is paused",
		Verdict: "C STOPPED IN TIME: not by its guard, which it ignored, but by the resource: the fence",
		EndMS:   2460,
		Events: []chartEvent{acq(85, "C", 996, "token 7"), renew(418, "C", 999), exp(1418, "C"),
			acq(1425, "B", 997, "token 8"), renew(1760, "B", 999), rel(1931, "B", true, ""),
			{AtMS: 1950, Holder: "C", Kind: chartRenew, OK: false, Note: "lock lost"}},
		Notes: []chartNote{{AtMS: 585, Holder: "C", Text: "paused (SIGSTOP)"},
			{AtMS: 1930, Holder: "B", Text: "writes: the fence admits token 8"},
			{AtMS: 1932, Holder: "C", Text: "resumed (SIGCONT)"},
			{AtMS: 2440, Holder: "C", Text: "writes anyway: the fence rejects token 7"}},
	}}
}

// The README's chart, docs/demo-timeline.svg, is what renderChart draws
// from the events it embeds, and they tell the demo's story. After a
// change to the chart, redraw it with a run of
// "go run ./cmd/interlock demo --chart docs/demo-timeline.svg".
func TestDocsChart(t *testing.T) {
	t.Parallel()
	svg, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", "demo-timeline.svg"))
	require.NoError(t, err)
	scenes := chartMetadata(t, svg)
	require.Len(t, scenes, 4)
	again, err := renderChart(scenes)
	require.NoError(t, err)
	assert.Equal(t, string(again), string(svg), "docs/demo-timeline.svg is drawn by this renderChart")
	checkChart(t, svg, scenes)
	checkStory(t, scenes)
}
