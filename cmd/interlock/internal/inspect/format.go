package inspect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/kinds"
)

// writeJSON prints each report as one JSON object on a line of its own.
func writeJSON(w io.Writer, reports []Report) error {
	enc := json.NewEncoder(w)
	for i := range reports {
		if err := enc.Encode(&reports[i]); err != nil {
			return err
		}
	}
	return nil
}

// TableTime is how the table shows a fair waiter's deadline.
const TableTime = "2006-01-02 15:04:05.000 MST"

// writeTable prints the reports as a table with one row per holder and per
// fair-lock waiter (a row saying "not locked" for a free lock), one row
// per semaphore or latch and per acquired permit, followed by the notes.
func writeTable(w io.Writer, reports []Report) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 8, 2, ' ', 0)
	row := func(cells ...string) { fmt.Fprintln(tw, strings.Join(cells, "\t")) }
	row("LOCK", "KIND", "TTL", "ROLE", "CLIENT ID", "OWNER ID", "HOLDS", "DETAIL")
	var notes []string
	for _, r := range reports {
		name := cli.Short(r.Name) // JSON has it whole
		for _, n := range r.Notes {
			notes = append(notes, name+": "+n)
		}
		if IsSyncKind(r.Kind) || r.Kind == kinds.RateLimit {
			ttl := "-" // no key
			if r.TTLms != 0 {
				ttl = FormatTTL(r.TTL())
			}
			rows := syncRows
			if r.Kind == kinds.RateLimit {
				rows = rateRows
			}
			for _, cells := range rows(&r) {
				row(append([]string{name, r.Kind, ttl}, cells...)...)
			}
			continue
		}
		if r.Subscribers > 0 {
			notes = append(notes, fmt.Sprintf("%s: %s subscribed to its channel: clients waiting for it", name, cli.Plural(int(r.Subscribers), "connection")))
		}
		kind := r.Kind
		if r.Mode != "" {
			kind += " (" + r.Mode + ")"
		}
		ttl := "-"
		if r.Locked {
			ttl = FormatTTL(r.TTL())
		}
		var token string
		if r.FenceToken != "" {
			token = "fencing token " + r.FenceToken
			if !r.Locked {
				token = "last " + token
			}
		}
		switch {
		case !r.Locked:
			row(name, kind, ttl, "-", "not locked", "", "", token)
		case len(r.Holders) == 0:
			row(name, kind, ttl, "-", "-", "-", "-", token)
		}
		for _, h := range r.Holders {
			client, owner := cli.Short(h.ClientID), strconv.FormatInt(h.OwnerID, 10)
			if h.ClientID == "" { // unparsed field: show it as stored
				client, owner = cli.Short(h.Field), "?"
			}
			role, detail := roleHolder, token
			switch {
			case h.Write:
				role = roleWriter
			case r.Mode != "":
				role, detail = roleReader, readHoldsDetail(h)
			}
			row(name, kind, ttl, role, client, owner, strconv.FormatInt(h.Holds, 10), detail)
		}
		for _, q := range r.Queue {
			client, owner := cli.Short(q.ClientID), strconv.FormatInt(q.OwnerID, 10)
			if q.ClientID == "" {
				client, owner = cli.Short(q.Owner), "?"
			}
			row(name, kind, ttl, roleWaiter, client, owner, "-", waiterDetail(q))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// The last column is ragged: drop the padding after short cells.
	for line := range strings.Lines(buf.String()) {
		if _, err := fmt.Fprintln(w, strings.TrimRight(line, " \n")); err != nil {
			return err
		}
	}
	for _, n := range notes {
		if _, err := fmt.Fprintln(w, "note: "+n); err != nil {
			return err
		}
	}
	return nil
}

// readHoldsDetail describes a reader's read holds: the time each has left.
func readHoldsDetail(h Holder) string {
	if len(h.ReadHoldTTLms) == 0 {
		return ""
	}
	ttls := make([]string, len(h.ReadHoldTTLms))
	for i, ms := range h.ReadHoldTTLms {
		switch {
		case ms == -2:
			ttls[i] = "gone"
		case ms < 0:
			ttls[i] = "no expiry"
		default:
			ttls[i] = FormatTTL(time.Duration(ms) * time.Millisecond)
		}
	}
	s := "read hold TTLs: " + strings.Join(ttls, ", ")
	if h.Stale {
		s += "; STALE: a dead reader"
	}
	return s
}

// waiterDetail describes a fair-lock waiter: its place and its deadline.
func waiterDetail(q Waiter) string {
	s := "#" + strconv.Itoa(q.Position)
	if q.Deadline == "" {
		return s + ", no deadline"
	}
	deadline := time.UnixMilli(q.DeadlineMs).Format(TableTime)
	left := time.Duration(q.RemainingMs) * time.Millisecond
	if q.Stale {
		return fmt.Sprintf("%s, deadline %s, passed %s ago; STALE: dropped when at the head", s, deadline, FormatTTL(-left))
	}
	return fmt.Sprintf("%s, deadline %s, in %s", s, deadline, FormatTTL(left))
}

// FormatTTL shows a TTL to the millisecond, or "no expiry".
func FormatTTL(d time.Duration) string {
	if d < 0 {
		return "no expiry"
	}
	return d.Round(time.Millisecond).String()
}
