package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"
)

// writeJSON prints each report as one JSON object on a line of its own.
func writeJSON(w io.Writer, reports []lockReport) error {
	enc := json.NewEncoder(w)
	for i := range reports {
		if err := enc.Encode(&reports[i]); err != nil {
			return err
		}
	}
	return nil
}

// writeTable prints the reports as a table with one row per holder (a row
// saying "not locked" for a free lock), followed by the notes.
func writeTable(w io.Writer, reports []lockReport) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "LOCK\tKIND\tTTL\tCLIENT ID\tOWNER ID\tHOLDS")
	var notes []string
	for _, r := range reports {
		kind := r.Kind
		if r.Mode != "" {
			kind += " (" + r.Mode + ")"
		}
		switch {
		case !r.Locked:
			fmt.Fprintf(tw, "%s\t%s\t-\tnot locked\t\t\n", r.Name, kind)
		case len(r.Holders) == 0:
			fmt.Fprintf(tw, "%s\t%s\t%s\t-\t-\t-\n", r.Name, kind, formatTTL(r.ttl()))
		}
		for _, h := range r.Holders {
			client, owner := h.ClientID, strconv.FormatInt(h.OwnerID, 10)
			if client == "" { // unparsed field: show it whole
				client, owner = h.Field, "?"
			}
			if h.Write {
				owner += " (write)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", r.Name, kind, formatTTL(r.ttl()), client, owner, h.Holds)
		}
		for _, n := range r.Notes {
			notes = append(notes, r.Name+": "+n)
		}
		if r.FenceToken != "" {
			notes = append(notes, r.Name+": last fencing token "+r.FenceToken)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range notes {
		if _, err := fmt.Fprintln(w, "note: "+n); err != nil {
			return err
		}
	}
	return nil
}

// formatTTL shows a TTL to the millisecond, or "no expiry".
func formatTTL(d time.Duration) string {
	if d < 0 {
		return "no expiry"
	}
	return d.Round(time.Millisecond).String()
}
