package compat_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/redisproc"
	"github.com/interlock-go/interlock/internal/script"
)

// The servers of the matrix print a MONITOR argument in one of two forms.
// Redis (6.0 to 8.x) and Valkey 9 quote it as sdscatrepr does: `"` and `\`
// escaped, \n \r \t \a \b for those bytes, \xHH for any other byte outside
// the printable ASCII range. Valkey 8.x prints the same escapes for the
// unprintable bytes but leaves `"` and `\` as they are, so that its lines
// cannot be read back by quoting rules alone: an argument holding `" "` reads
// as two arguments, and a `\` followed by n reads as a newline.
//
// A monitor finds out which form its server uses by watching an ECHO of a
// probe holding both characters, then reads the lines of the bare form with
// the help of the strings the test expects (known): an argument whose
// printed form is that of a known string is read as that string, and only
// the rest is decoded by rule. A line is therefore read back exactly
// whenever it prints what the test expects, and a line that does not cannot
// pass for one that does: its printed form differs from the expected one.

// monitorForm is how a server prints the arguments of a MONITOR line.
type monitorForm int

const (
	// monitorEscaped: `"` and `\` escaped (Redis, Valkey 9).
	monitorEscaped monitorForm = iota
	// monitorBare: `"` and `\` left as they are (Valkey 8.x).
	monitorBare
)

func (f monitorForm) String() string {
	if f == monitorBare {
		return "bare quotes and backslashes"
	}
	return "escaped"
}

// monitor is a MONITOR connection and the form its server prints.
type monitor struct {
	*stream
	form monitorForm
}

// monitorProbe is the tail of the probe ECHOed to learn a server's form.
const monitorProbe = `"\`

// openMonitor opens a MONITOR connection to addr, learns its form with a
// probe (which it takes off the stream, leaving every other line) and
// returns it; t.Cleanup closes it.
func openMonitor(t testing.TB, addr string) *monitor {
	t.Helper()
	s := openStream(t, addr, 1, "MONITOR")
	probe := unique("compat-monitor-probe") + monitorProbe
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	_, err := redisproc.CommandString(ctx, addr, "ECHO", probe)
	require.NoError(t, err, "ECHO probe on %s", addr)
	line, _ := s.take(t, markerTimeout, func(v any) bool {
		l, _ := v.(string)
		return strings.Contains(l, strings.TrimSuffix(probe, monitorProbe))
	}).(string)
	m := &monitor{stream: s}
	switch {
	case strings.HasSuffix(line, ` "`+strconv.Quote(probe)[1:]): // `..."\"\\"`
		m.form = monitorEscaped
	case strings.HasSuffix(line, ` "`+probe+`"`):
		m.form = monitorBare
	default:
		t.Fatalf("MONITOR on %s printed the probe ECHO %q as %q, in neither known form", addr, probe, line)
	}
	return m
}

// take waits up to timeout for a queued value for which match returns true
// and removes it from the queue, leaving the others in order.
func (s *stream) take(t testing.TB, timeout time.Duration, match func(any) bool) any {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		for i, v := range s.queue {
			if match(v) {
				s.queue = append(s.queue[:i:i], s.queue[i+1:]...)
				s.mu.Unlock()
				return v
			}
		}
		err := s.err
		s.mu.Unlock()
		if err != nil {
			t.Fatalf("stream closed while waiting: %v", err)
		}
		select {
		case <-s.notify:
		case <-deadline.C:
			t.Fatalf("nothing matching within %v", timeout)
		}
	}
}

// untilEcho reads the lines up to the ECHO of mark (sent by the caller
// after the commands it wants to see) and parses them, reading the bare
// form with the strings of want as known strings. The ECHO's own line is
// left out.
func (m *monitor) untilEcho(t testing.TB, mark string, want ...scriptRun) []monLine {
	t.Helper()
	var known []string
	for _, w := range want {
		for _, l := range w.lists() {
			known = append(known, l...)
		}
	}
	var lines []monLine
	for _, v := range m.until(t, markerTimeout, func(v any) bool {
		s, _ := v.(string)
		return strings.HasSuffix(s, `"echo" "`+mark+`"`) || strings.HasSuffix(s, `"ECHO" "`+mark+`"`)
	}) {
		s, ok := v.(string)
		require.True(t, ok, "MONITOR pushed %#v", v)
		l, err := m.parse(s, known...)
		require.NoError(t, err)
		lines = append(lines, l)
	}
	return lines
}

// parse reads one MONITOR line in m's form; known strings and the scripts'
// sources settle what the bare form leaves open.
func (m *monitor) parse(s string, known ...string) (monLine, error) {
	if m.form == monitorEscaped {
		return parseMonitor(s)
	}
	return parseBareMonitor(s, known...)
}

// scriptSources is every embedded script's source, known to every bare
// parse: an EVAL line carries one, quotes and all.
var scriptSources = func() []string {
	var srcs []string
	for _, s := range script.All() {
		srcs = append(srcs, s.Source())
	}
	return srcs
}()

// parseBareMonitor parses a MONITOR line of the bare form (Valkey 8.x), such
// as
//
//	1796580769.326504 [0 lua] "set" "q"k" "v\"w"
//
// whose arguments are q"k and v\"w. Of the ways to cut the line into
// arguments, it takes the one that reads the most arguments as known strings
// (the first such cut, the shortest first argument, on a tie); an argument
// that is no known string's printed form is decoded by decodeBare.
func parseBareMonitor(s string, known ...string) (monLine, error) {
	client, rest, err := monitorPrefix(s)
	if err != nil {
		return monLine{}, err
	}
	printed := make(map[string]string, len(known)+len(scriptSources))
	for _, k := range append(known, scriptSources...) {
		printed[printBare(k)] = k
	}
	// best[i]: the best reading of rest[i:], which starts with a quote.
	type reading struct {
		args  []string
		known int
		ok    bool
	}
	memo := map[int]reading{}
	var best func(i int) reading
	best = func(i int) reading {
		if i == len(rest) {
			return reading{ok: true}
		}
		if r, ok := memo[i]; ok {
			return r
		}
		var r reading
		if rest[i] == '"' {
			for j := i + 1; j < len(rest); j++ {
				// A closing quote is one at the end or before ` "`.
				if rest[j] != '"' || (j+1 < len(rest) && !strings.HasPrefix(rest[j+1:], ` "`)) {
					continue
				}
				next := j + 1
				if next < len(rest) {
					next++ // the space
				}
				tail := best(next)
				if !tail.ok {
					continue
				}
				body := rest[i+1 : j]
				arg, isKnown := printed[body]
				if !isKnown {
					arg = decodeBare(body)
				}
				n := tail.known
				if isKnown {
					n++
				}
				if !r.ok || n > r.known {
					r = reading{args: append([]string{arg}, tail.args...), known: n, ok: true}
				}
			}
		}
		memo[i] = r
		return r
	}
	r := best(0)
	if !r.ok {
		return monLine{}, fmt.Errorf("monitor line %q: arguments not quoted as Valkey 8 quotes them", s)
	}
	return monLine{Client: client, Args: r.args}, nil
}

// monitorPrefix splits a MONITOR line into the client ("lua", or
// host:port) and the quoted arguments after it.
func monitorPrefix(s string) (client, rest string, err error) {
	open := strings.IndexByte(s, '[')
	end := strings.Index(s, "] ")
	if open < 0 || end < open {
		return "", "", fmt.Errorf("monitor line %q: no client", s)
	}
	_, client, ok := strings.Cut(s[open+1:end], " ")
	if !ok {
		return "", "", fmt.Errorf("monitor line %q: no client", s)
	}
	return client, s[end+2:], nil
}

// printBare prints b as Valkey 8.x does inside a MONITOR argument's quotes.
func printBare(b string) string {
	var out strings.Builder
	for i := range len(b) {
		switch c := b[i]; c {
		case '\n':
			out.WriteString(`\n`)
		case '\r':
			out.WriteString(`\r`)
		case '\t':
			out.WriteString(`\t`)
		case '\a':
			out.WriteString(`\a`)
		case '\b':
			out.WriteString(`\b`)
		default:
			if printable(c) {
				out.WriteByte(c)
			} else {
				fmt.Fprintf(&out, `\x%02x`, c)
			}
		}
	}
	return out.String()
}

// printable reports whether MONITOR prints c as itself (in the bare form;
// the escaped form escapes `"` and `\` too).
func printable(c byte) bool { return c >= 0x20 && c <= 0x7e }

// decodeBare reverses printBare where it can: a `\` starts an escape only
// when an escape can follow it there (\n \r \t \a \b, or \x and two hex
// digits of a byte that would not be printed as itself); any other `\`
// stands for itself.
func decodeBare(p string) string {
	var out strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c != '\\' || i+1 >= len(p) {
			out.WriteByte(c)
			continue
		}
		switch p[i+1] {
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 't':
			out.WriteByte('\t')
		case 'a':
			out.WriteByte('\a')
		case 'b':
			out.WriteByte('\b')
		case 'x':
			if i+3 < len(p) {
				if v, err := strconv.ParseUint(p[i+2:i+4], 16, 8); err == nil && !printable(byte(v)) {
					out.WriteByte(byte(v))
					i += 3
					continue
				}
			}
			out.WriteByte(c)
			continue
		default:
			out.WriteByte(c)
			continue
		}
		i++
	}
	return out.String()
}

// TestBareMonitorLines reads lines as Valkey 8.1.1 printed them (seen with
// redis-cli MONITOR on interlock-test/valkey:8.1.1), and lines whose bare
// form is ambiguous, which only the known strings settle.
func TestBareMonitorLines(t *testing.T) {
	idB := "\x00\"\\ \n\r\t\x7f\x80\xff*?[]{}" // the sync vectors' permit id <B>
	for _, c := range []struct {
		line  string
		known []string
		want  []string
	}{
		{`1796580769.316807 [0 127.0.0.1:42706] "set" "a"b" "c\d"`, nil, []string{"set", `a"b`, `c\d`}},
		{`1796580769.321181 [0 127.0.0.1:42708] "set" "x y" "tab\there\x01\xff"`, nil, []string{"set", "x y", "tab\there\x01\xff"}},
		{`1796580769.326504 [0 lua] "set" "q"k" "v\"w"`, nil, []string{"set", `q"k`, `v\"w`}},
		{`1 [0 lua] "zadd" "T" "1" "` + printBare(idB) + `"`, nil, []string{"zadd", "T", "1", idB}},
		// `" "` inside an argument: one argument or two.
		{`1 [0 127.0.0.1:1] "echo" "" ""`, nil, []string{"echo", "", ""}},
		{`1 [0 127.0.0.1:1] "echo" "" ""`, []string{`" "`}, []string{"echo", `" "`}},
		// A literal backslash before n: a newline unless known.
		{`1 [0 lua] "get" "a\nb"`, nil, []string{"get", "a\nb"}},
		{`1 [0 lua] "get" "a\nb"`, []string{`a\nb`}, []string{"get", `a\nb`}},
		// \x and hex digits of a printable byte are never an escape.
		{`1 [0 lua] "get" "\x41"`, nil, []string{"get", `\x41`}},
	} {
		l, err := parseBareMonitor(c.line, c.known...)
		require.NoError(t, err, c.line)
		require.Equal(t, c.want, l.Args, "%s (known %q)", c.line, c.known)
	}
	for _, s := range script.All() {
		line := `1 [0 127.0.0.1:1] "EVAL" "` + printBare(s.Source()) + `" "1" "k"`
		l, err := parseBareMonitor(line)
		require.NoError(t, err)
		require.Equal(t, []string{"EVAL", s.Source(), "1", "k"}, l.Args, s.Name())
	}
	_, err := parseBareMonitor(`1 [0 lua] "get" "a" b`)
	require.Error(t, err)
}
