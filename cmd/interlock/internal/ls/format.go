package ls

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/inspect"
	"github.com/interlock-go/interlock/cmd/interlock/internal/kinds"
)

// maxHolders is how many holders a row of the table names.
const maxHolders = 3

// writeJSON prints the listing as one JSON object.
func writeJSON(w io.Writer, l *listing) error {
	return json.NewEncoder(w).Encode(l)
}

// writeTable prints the listing as a table with one row per
// synchronizer, then the notes and a summary line.
func writeTable(w io.Writer, l *listing) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 8, 2, ' ', 0)
	row := func(cells ...string) { fmt.Fprintln(tw, strings.Join(cells, "\t")) }
	row("NAME", "KIND", "TTL", "HOLDERS", "WAITERS", "FLAGS")
	var notes []string
	var alike []string // kinds marked "*", in order of appearance
	flagged := 0
	for i := range l.Synchronizers {
		e := &l.Synchronizers[i]
		name := cli.Short(e.Name) // JSON has it whole
		for _, n := range e.Notes {
			notes = append(notes, name+": "+n)
		}
		kind := e.Kind
		if e.Mode != "" {
			kind += " (" + e.Mode + ")"
		}
		if len(e.Alike) > 0 {
			kind += "*"
			if !slices.Contains(alike, e.Kind) {
				alike = append(alike, e.Kind)
			}
		}
		flags := "-"
		if len(e.Flags) > 0 {
			flags = strings.Join(e.Flags, ",")
			flagged++
		}
		row(name, kind, ttlCell(e), holdersCell(e), waitersCell(e), flags)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var out strings.Builder
	for line := range strings.Lines(buf.String()) {
		out.WriteString(strings.TrimRight(line, " \n") + "\n")
	}
	for _, n := range notes {
		out.WriteString("note: " + n + "\n")
	}
	for _, k := range alike {
		fmt.Fprintf(&out, "%s*: %s: Redis holds them alike\n", k, alikeNotes[k])
	}
	for _, n := range l.Notes {
		out.WriteString("note: " + n + "\n")
	}
	if l.Truncated {
		out.WriteString("note: --limit reached: more synchronizers may exist (a larger --limit, or a PATTERN, finds them)\n")
	}
	if !l.Counters {
		out.WriteString("note: string keys holding an integer are listed only while a client waits on them: " +
			"semaphores, latches and other counters are stored alike (--counters lists them all)\n")
	}
	scanned := "keys"
	if l.Match != "" {
		scanned += " matching " + l.Match
	}
	fmt.Fprintf(&out, "%s (%d flagged); %d %s scanned on %s; not listed: %s, %s\n",
		cli.Plural(len(l.Synchronizers), "synchronizer"), flagged, l.ScannedKeys, scanned, cli.Plural(len(l.Nodes), "node"),
		cli.Plural(int(l.UnlockLatches), "unlock latch key"), cli.Plural(int(l.Receipts), "receipt key"))
	_, err := io.WriteString(w, out.String())
	return err
}

// ttlCell is the TTL cell: "-" when there is no key.
func ttlCell(e *entry) string {
	if inspect.IsSyncKind(e.Kind) || e.Kind == kinds.RateLimit {
		if e.TTLms == 0 {
			return "-"
		}
		return inspect.FormatTTL(e.TTL())
	}
	if !e.Locked {
		return "-"
	}
	return inspect.FormatTTL(e.TTL())
}

// holdersCell is the HOLDERS cell: a lock's holders as stored (hash field,
// then "xN" for N holds), or a semaphore's or latch's state.
func holdersCell(e *entry) string {
	switch rl := e.RateLimit; {
	case rl != nil && rl.Type == "":
		return "not set"
	case rl != nil && rl.Overall != nil:
		return fmt.Sprintf("%s: %d free, %d taken", inspect.RateSummary(rl), rl.Overall.Free, rl.Overall.Taken)
	case rl != nil:
		return fmt.Sprintf("%s: %s", inspect.RateSummary(rl), cli.Plural(len(rl.Clients), "client"))
	case e.Kind == kinds.Counter && e.Permits != nil:
		return strconv.FormatInt(*e.Permits, 10) + " (permits or count)"
	case e.Kind == kinds.Latch && e.Count != nil:
		state := "closed"
		if *e.Count <= 0 {
			state = "open"
		}
		return fmt.Sprintf("count %d (%s)", *e.Count, state)
	case e.Kind == kinds.Expirable && e.Permits != nil:
		return fmt.Sprintf("%d acquired, %d free", len(e.Acquired), *e.Permits)
	case e.Permits != nil:
		return fmt.Sprintf("%d free", *e.Permits)
	case !e.Locked:
		return "not locked"
	case len(e.Holders) == 0:
		return "-"
	}
	var cells []string
	for i, h := range e.Holders {
		if i == maxHolders {
			cells = append(cells, fmt.Sprintf("+%d more", len(e.Holders)-i))
			break
		}
		c := cli.Short(h.Field)
		if h.Holds != 1 {
			c += " x" + strconv.FormatInt(h.Holds, 10)
		}
		cells = append(cells, c)
	}
	return strings.Join(cells, ", ")
}

// waitersCell is the WAITERS cell: a fair lock's queue, and the
// connections subscribed to the object's channels.
func waitersCell(e *entry) string {
	var cells []string
	if len(e.Queue) > 0 {
		cells = append(cells, strconv.Itoa(len(e.Queue))+" queued")
	}
	if e.Subscribers > 0 {
		cells = append(cells, strconv.FormatInt(e.Subscribers, 10)+" subscribed")
	}
	if len(cells) == 0 {
		return "-"
	}
	return strings.Join(cells, ", ")
}
