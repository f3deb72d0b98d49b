package demo

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
)

// The chart's geometry, in SVG user units (pixels at 100 %).
const (
	chartWidth    = 1200
	chartLeft     = 150 // the plot's left edge: lane labels and TTL ticks on its left
	chartRight    = 40  // room right of the plot
	chartHeadH    = 100 // title, explanation and legend
	chartTitleH   = 40  // a scene's title and verdict
	chartLaneH    = 50  // a holder's band, flags included
	chartBandTop  = 13  // the top of the band's scale below the lane's top: room for pennants
	chartNoteH    = 16  // the row of notes under a lane
	chartAxisH    = 26  // a scene's time axis
	chartSceneGap = 14  // between scenes
	chartTick     = 0.5 // seconds between time ticks
)

// Colours.
const (
	colourOK      = "#2ca02c"
	colourFailed  = "#d62728"
	colourExpired = "#333333"
	colourText    = "#222222"
	colourMuted   = "#666666"
	colourGrid    = "#e3e3e3"
	colourAfter   = "#f3f3f3"
)

// holderColours are the bands' colours, by holder.
var holderColours = map[string]string{"A": "#1f77b4", "B": "#ff7f0e", "C": "#9467bd"}

// holderLabels describe the holders under their names.
var holderLabels = map[string]string{"A": "worker A", "B": "worker B", "C": "own process"}

// writeChart writes the recorded timeline to file as SVG.
func (r *chartRecorder) writeChart(file string) error {
	svg, err := renderChart(r.scenes)
	if err != nil {
		return err
	}
	return os.WriteFile(file, svg, 0o644)
}

// renderChart draws the scenes' timelines as one self-contained SVG image,
// one panel per scene. The output depends only on scenes. Each band, flag,
// expiry and note carries data- attributes saying what it shows, and the
// scenes themselves are in the image's <metadata> as JSON.
func renderChart(scenes []chartScene) ([]byte, error) {
	data, err := json.Marshal(scenes)
	if err != nil {
		return nil, err
	}
	c := chart{scenes: scenes}
	c.scale()
	height := chartHeadH
	for _, s := range scenes {
		height += c.sceneHeight(s)
	}
	b := &c.b
	fmt.Fprintf(b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" `+
		`font-family="DejaVu Sans, Helvetica, Arial, sans-serif" data-chart="interlock-demo" data-scenes="%d">`+"\n",
		chartWidth, height, chartWidth, height, len(scenes))
	fmt.Fprintf(b, "<title>interlock demo: the watchdog story, measured</title>\n")
	fmt.Fprintf(b, "<metadata id=\"interlock-demo-events\"><![CDATA[%s]]></metadata>\n",
		strings.ReplaceAll(string(data), "]]>", "]]]]><![CDATA[>"))
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", chartWidth, height)
	c.head()
	y := chartHeadH
	for i, s := range scenes {
		c.scene(i+1, s, y)
		y += c.sceneHeight(s)
	}
	b.WriteString("</svg>\n")
	return b.Bytes(), nil
}

// chart is an SVG being written.
type chart struct {
	b      bytes.Buffer
	scenes []chartScene
	pxPerS float64 // horizontal scale, the same in every scene
	ttlMax float64 // seconds at the top of every band's scale
	tMax   float64 // seconds at the right end of every time axis
}

// scale chooses the common time and TTL scales.
func (c *chart) scale() {
	end, ttl := 0.0, 0.0
	for _, s := range c.scenes {
		end = max(end, secsOf(s.EndMS))
		for _, e := range s.Events {
			end = max(end, secsOf(e.AtMS))
			ttl = max(ttl, secsOf(e.TTLMS))
		}
	}
	c.tMax = max(chartTick, math.Ceil(end/chartTick)*chartTick)
	c.ttlMax = max(0.5, math.Ceil(ttl/0.5)*0.5)
	c.pxPerS = float64(chartWidth-chartLeft-chartRight) / c.tMax
}

// sceneHeight is the height of scene s's panel.
func (c *chart) sceneHeight(s chartScene) int {
	return chartTitleH + len(holdersOf(s))*(chartLaneH+chartNoteH) + chartAxisH + chartSceneGap
}

// x returns the horizontal position of t seconds into a scene.
func (c *chart) x(t float64) float64 { return chartLeft + t*c.pxPerS }

// head writes the chart's title, what it shows, and the legend.
func (c *chart) head() {
	b := &c.b
	text(b, 20, 30, 20, "bold", colourText, "start", "interlock demo: the watchdog story, measured")
	text(b, 20, 52, 13, "normal", colourMuted, "start",
		"Each band is how long the holder's lock has left before it truly expires (the key's PTTL, read every "+
			fmt.Sprint(chartSampleEvery.Milliseconds())+" ms): it runs down,")
	text(b, 20, 68, 13, "normal", colourMuted, "start",
		"a renewal pushes it back up, an expiry or a release takes it to zero. Times are seconds since the scene began, as the demo printed them.")
	y := 84.0
	x := 20.0
	b.WriteString(`<g data-legend="1">` + "\n")
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="22" height="12" fill="%s" fill-opacity="0.3" stroke="%s"/>`+"\n",
		x, y-10, holderColours["A"], holderColours["A"])
	text(b, x+28, y, 12, "normal", colourText, "start", "remaining TTL of a holder's lock")
	x += 250
	legendFlag(b, x, y, colourOK)
	text(b, x+16, y, 12, "normal", colourText, "start", "acquired, renewed or released")
	x += 220
	legendFlag(b, x, y, colourFailed)
	text(b, x+16, y, 12, "normal", colourText, "start", "failed")
	x += 80
	cross(b, x+5, y-4, colourExpired)
	text(b, x+16, y, 12, "normal", colourText, "start", "expired: the TTL ran out")
	x += 190
	diamond(b, x+5, y-4)
	text(b, x+16, y, 12, "normal", colourText, "start", "what the worker did")
	b.WriteString("</g>\n")
}

// scene writes panel n (from 1) for s, from height top down.
func (c *chart) scene(n int, s chartScene, top int) {
	b := &c.b
	fmt.Fprintf(b, `<g data-scene="%d" data-title="%s" data-end-ms="%d">`+"\n", n, esc(s.Title), s.EndMS)
	y := float64(top)
	text(b, 20, y+16, 15, "bold", colourText, "start", s.Title)
	if s.Verdict != "" {
		text(b, 38, y+33, 12.5, "normal", colourMuted, "start", s.Verdict)
	}
	y += chartTitleH
	holders := holdersOf(s)
	lanesH := float64(len(holders) * (chartLaneH + chartNoteH))
	end := secsOf(s.EndMS)
	// The plot: white while the scene ran, grey after; a grid line per tick.
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n",
		c.x(0), y, c.x(c.tMax)-c.x(0), lanesH, colourAfter)
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#ffffff"/>`+"\n",
		c.x(0), y, c.x(end)-c.x(0), lanesH)
	for t := 0.0; t <= c.tMax+1e-9; t += chartTick {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n",
			c.x(t), y, c.x(t), y+lanesH, colourGrid)
	}
	for _, h := range holders {
		c.lane(s, h, y)
		y += chartLaneH + chartNoteH
	}
	c.axis(y)
	b.WriteString("</g>\n")
}

// lane writes holder h's lane of scene s from height top down: its name,
// its band, its flags and expiries, and its notes.
func (c *chart) lane(s chartScene, h string, top float64) {
	b := &c.b
	base := top + chartLaneH // the band's zero
	colour := holderColours[h]
	if colour == "" {
		colour = colourMuted
	}
	label := holderLabels[h]
	text(b, 20, base-20, 18, "bold", colour, "start", h)
	if label != "" {
		text(b, 20, base-5, 11, "normal", colourMuted, "start", label)
	}
	// The TTL scale.
	bandH := float64(chartLaneH - chartBandTop)
	text(b, chartLeft-6, base-bandH+4, 10, "normal", colourMuted, "end", fmtSecs(c.ttlMax)+" TTL")
	text(b, chartLeft-6, base+3, 10, "normal", colourMuted, "end", "0")
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999999"/>`+"\n",
		c.x(0), base, c.x(c.tMax), base)

	var events []chartEvent
	for _, e := range s.Events {
		if e.Holder == h {
			events = append(events, e)
		}
	}
	y := func(ttl float64) float64 { return base - bandH*min(ttl, c.ttlMax)/c.ttlMax }
	if d, holds := c.band(events, secsOf(s.EndMS), y); holds > 0 {
		fmt.Fprintf(b, `<path data-band="%s" data-holds="%d" d="%s" fill="%s" fill-opacity="0.3" stroke="%s" stroke-width="1.5" stroke-linejoin="round"/>`+"\n",
			esc(h), holds, d, colour, colour)
	}
	for _, e := range events {
		at := c.x(secsOf(e.AtMS))
		desc := fmt.Sprintf("%s %s at %s", h, e.Kind, stamp(msDuration(e.AtMS)))
		if e.Kind == chartExpire {
			fmt.Fprintf(b, `<g data-expire="%s" data-at-ms="%d"><title>%s: the TTL ran out</title>`+"\n", esc(h), e.AtMS, esc(desc))
			cross(b, at, base, colourExpired)
			text(b, at+7, base-6, 10.5, "normal", colourExpired, "start", "expired")
			b.WriteString("</g>\n")
			continue
		}
		fill, outcome := colourOK, "succeeded"
		if !e.OK {
			fill, outcome = colourFailed, "failed"
		}
		desc += " " + outcome
		if e.OK && e.Kind != chartRelease {
			desc += ", TTL " + secs(msDuration(e.TTLMS))
		}
		if e.Note != "" {
			desc += " (" + e.Note + ")"
		}
		fmt.Fprintf(b, `<g data-flag="%s" data-holder="%s" data-ok="%t" data-at-ms="%d" data-ttl-ms="%d" data-colour="%s"><title>%s</title>`+"\n",
			e.Kind, esc(h), e.OK, e.AtMS, e.TTLMS, fill, esc(desc))
		// A release's pennant points back, the others' forward, so that a
		// release right after an acquisition still shows both.
		left := e.Kind == chartRelease
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1.5"/>`+"\n",
			at, base, at, top+2, fill)
		pennant(b, at, top+2, fill, left)
		if e.Note != "" {
			if left {
				text(b, at-14, top+11, 10.5, "normal", fill, "end", e.Note)
			} else {
				text(b, at+14, top+11, 10.5, "normal", fill, "start", e.Note)
			}
		}
		b.WriteString("</g>\n")
	}
	for _, nt := range s.Notes {
		if nt.Holder != h {
			continue
		}
		at := c.x(secsOf(nt.AtMS))
		fmt.Fprintf(b, `<g data-note="%s" data-at-ms="%d"><title>%s at %s: %s</title>`+"\n",
			esc(h), nt.AtMS, esc(h), stamp(msDuration(nt.AtMS)), esc(nt.Text))
		diamond(b, at, base+8)
		text(b, at+7, base+12, 10.5, "normal", colourText, "start", nt.Text)
		b.WriteString("</g>\n")
	}
}

// band returns the outline of a holder's band from its events (in time
// order) in a scene that ran end seconds, and how many holds it shows.
// Each hold rises at its acquisition to the TTL it got, runs down, is
// pushed back up by each renewal, and ends at its release or expiry, or
// at the scene's end.
func (c *chart) band(events []chartEvent, end float64, y func(float64) float64) (string, int) {
	var d strings.Builder
	holds := 0
	holding := false
	var t0, ttl0 float64 // the last event of the hold: when, and the TTL it left
	pt := func(t, ttl float64) { fmt.Fprintf(&d, " L%.1f %.1f", c.x(t), y(ttl)) }
	// runDown draws the TTL running down from the hold's last event to t.
	runDown := func(t float64) float64 {
		if left := ttl0 - (t - t0); left > 0 {
			pt(t, left)
			return left
		}
		pt(t0+ttl0, 0)
		pt(t, 0)
		return 0
	}
	for _, e := range events {
		t, ttl := secsOf(e.AtMS), secsOf(e.TTLMS)
		switch {
		case e.Kind == chartAcquire && e.OK && !holding:
			holding, holds = true, holds+1
			fmt.Fprintf(&d, " M%.1f %.1f", c.x(t), y(0))
			pt(t, ttl)
			t0, ttl0 = t, ttl
		case e.Kind == chartRenew && e.OK && holding:
			runDown(t)
			pt(t, ttl)
			t0, ttl0 = t, ttl
		case (e.Kind == chartRelease && e.OK || e.Kind == chartExpire) && holding:
			runDown(t)
			pt(t, 0)
			d.WriteString(" Z")
			holding = false
		}
	}
	if holding {
		runDown(max(end, t0))
		pt(max(end, t0), 0)
		d.WriteString(" Z")
	}
	return strings.TrimSpace(d.String()), holds
}

// axis writes a scene's time axis with its top at y.
func (c *chart) axis(y float64) {
	b := &c.b
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#555555"/>`+"\n", c.x(0), y, c.x(c.tMax), y)
	for t := 0.0; t <= c.tMax+1e-9; t += chartTick {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#555555"/>`+"\n", c.x(t), y, c.x(t), y+5)
		text(b, c.x(t), y+17, 11, "normal", colourText, "middle", fmtSecs(t))
	}
}

// holdersOf returns the holders of a scene, in the order they appear.
func holdersOf(s chartScene) []string {
	var hs []string
	for _, e := range s.Events {
		if !slices.Contains(hs, e.Holder) {
			hs = append(hs, e.Holder)
		}
	}
	for _, n := range s.Notes {
		if !slices.Contains(hs, n.Holder) {
			hs = append(hs, n.Holder)
		}
	}
	return hs
}

// text writes a text element.
func text(b *bytes.Buffer, x, y, size float64, weight, fill, anchor, s string) {
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="%g" font-weight="%s" fill="%s" text-anchor="%s">%s</text>`+"\n",
		x, y, size, weight, fill, anchor, esc(s))
}

// pennant writes a flag's pennant with its pole's top at (x, y), pointing
// right, or left.
func pennant(b *bytes.Buffer, x, y float64, fill string, left bool) {
	w := 11.0
	if left {
		w = -w
	}
	fmt.Fprintf(b, `<path d="M%.1f %.1f L%.1f %.1f L%.1f %.1f Z" fill="%s"/>`+"\n", x, y, x+w, y+4.5, x, y+9, fill)
}

// legendFlag writes a flag standing on (x, y+2).
func legendFlag(b *bytes.Buffer, x, y float64, fill string) {
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1.5"/>`+"\n", x, y+2, x, y-11, fill)
	pennant(b, x, y-11, fill, false)
}

// cross writes an expiry's mark centred on (x, y).
func cross(b *bytes.Buffer, x, y float64, stroke string) {
	fmt.Fprintf(b, `<path d="M%.1f %.1f L%.1f %.1f M%.1f %.1f L%.1f %.1f" stroke="%s" stroke-width="2.5"/>`+"\n",
		x-5, y-5, x+5, y+5, x-5, y+5, x+5, y-5, stroke)
}

// diamond writes a note's mark centred on (x, y).
func diamond(b *bytes.Buffer, x, y float64) {
	fmt.Fprintf(b, `<path d="M%.1f %.1f L%.1f %.1f L%.1f %.1f L%.1f %.1f Z" fill="%s"/>`+"\n",
		x, y-4, x+4, y, x, y+4, x-4, y, colourMuted)
}

// esc escapes s for XML text.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // writes to a strings.Builder never fail
	return b.String()
}

// secsOf converts milliseconds to seconds.
func secsOf(ms int64) float64 { return float64(ms) / 1000 }

// fmtSecs formats seconds for an axis: "0s", "0.5s", "1s".
func fmtSecs(t float64) string { return fmt.Sprintf("%gs", math.Round(t*100)/100) }
