package demo

import (
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A browser shows the chart: headless Chromium's screenshot of it has the
// bands' and the flags' colours. Skipped where no chromium is installed.
func TestChartInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("no chromium on PATH")
	}
	dir := t.TempDir()
	svg, err := renderChart(sampleScenes())
	require.NoError(t, err)
	file := filepath.Join(dir, "chart.svg")
	require.NoError(t, os.WriteFile(file, svg, 0o644))
	shot := filepath.Join(dir, "chart.png")
	require.NoError(t, screenshot(t.Context(), browser, file, shot, filepath.Join(dir, "profile")))

	f, err := os.Open(shot)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	for name, colour := range map[string]string{
		"a succeeded flag": colourOK, "a failed flag": colourFailed,
		"A's band": holderColours["A"], "B's band": holderColours["B"], "C's band": holderColours["C"],
	} {
		assert.Greater(t, countColour(img, colour), 20, "the screenshot shows %s (%s)", name, colour)
	}
}

// screenshot has headless Chromium render file and save a PNG of it to
// shot, with a fresh profile in profile.
func screenshot(ctx context.Context, browser, file, shot, profile string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+profile, "--hide-scrollbars", "--window-size=1200,1100",
		"--screenshot="+shot, "file://"+file)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w; its output:\n%s", browser, err, out)
	}
	return nil
}

// countColour counts the pixels of img within a few steps of colour
// ("#rrggbb") in each component.
func countColour(img image.Image, colour string) int {
	v, err := strconv.ParseUint(colour[1:], 16, 32)
	if err != nil {
		panic(err)
	}
	want := [3]int{int(v >> 16), int(v >> 8 & 0xff), int(v & 0xff)}
	near := func(a, b int) bool { return a-b <= 12 && b-a <= 12 }
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if near(int(r>>8), want[0]) && near(int(g>>8), want[1]) && near(int(bl>>8), want[2]) {
				n++
			}
		}
	}
	return n
}
