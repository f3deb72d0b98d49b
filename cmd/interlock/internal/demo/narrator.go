package demo

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// narrator prints the demo's story: scene headings, then one line per
// event with the time elapsed since the scene began, so that the reader
// sees the real timings.
type narrator struct {
	w     io.Writer
	begin time.Time // start of the demo
	start time.Time // start of the current scene

	title       string // the current scene's title
	verdictText string // its verdict on one line, once told
}

// newNarrator returns a narrator writing to w; the clock starts now.
func newNarrator(w io.Writer) *narrator {
	now := time.Now()
	return &narrator{w: w, begin: now, start: now}
}

// text prints a paragraph, indented by indent spaces.
func (n *narrator) text(indent int, format string, args ...any) {
	pad := strings.Repeat(" ", indent)
	for line := range strings.Lines(fmt.Sprintf(format, args...)) {
		fmt.Fprint(n.w, pad+line)
	}
	fmt.Fprintln(n.w)
}

// scene prints a heading and an introduction and restarts the scene clock.
func (n *narrator) scene(title, intro string) {
	fmt.Fprintf(n.w, "\n%s\n", title)
	n.text(3, "%s", intro)
	n.title, n.verdictText = title, ""
	n.start = time.Now()
}

// elapsed is the time since the current scene began.
func (n *narrator) elapsed() time.Duration { return time.Since(n.start) }

// say prints an event of actor who ("A", "B", "C" or "." for the
// narrator), stamped with the scene's elapsed time.
func (n *narrator) say(who, format string, args ...any) {
	fmt.Fprintf(n.w, "   %6s  %-2s %s\n", stamp(n.elapsed()), who, fmt.Sprintf(format, args...))
}

// verdict prints the conclusion of a scene.
func (n *narrator) verdict(format string, args ...any) {
	lines := strings.Split(fmt.Sprintf(format, args...), "\n")
	n.verdictText = strings.Join(lines, " ")
	fmt.Fprintf(n.w, "   => %s\n", lines[0])
	for _, l := range lines[1:] {
		fmt.Fprintf(n.w, "      %s\n", l)
	}
}

// stamp formats an elapsed time as "+1.23s".
func stamp(d time.Duration) string {
	return fmt.Sprintf("+%.2fs", d.Seconds())
}

// secs formats a duration as seconds with two decimals, "1.23s".
func secs(d time.Duration) string {
	return fmt.Sprintf("%.2fs", d.Seconds())
}
