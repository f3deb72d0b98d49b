package inspect

import (
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/kinds"
	"github.com/interlock-go/interlock/internal/keys"
)

// hintKinds are the values of inspect's --kind.
var hintKinds = []string{kinds.Semaphore, kinds.Expirable, kinds.Latch}

// rolePermit is the role of an expirable semaphore's acquired permit in
// the table.
const rolePermit = "permit"

// NeverExpires is the score of a permit acquired with no lease
// (Redisson's Long.MAX_VALUE/10000).
const NeverExpires = 922337203685477

// permit is one acquired permit of an expirable semaphore: a member of
// {NAME}:timeout.
type Permit struct {
	// ID is the member, 16 raw bytes, as 32 lower-case hex characters
	// (Redisson's form, and INTERLOCK_PERMIT_IDS's).
	ID string `json:"id"`
	// ExpiryMs is when the lease ends, in epoch milliseconds of the
	// acquiring client's clock; 0 for a permit that never expires.
	ExpiryMs int64 `json:"expiry_ms,omitempty"`
	// LeaseLeftMs is the time left until ExpiryMs on inspect's clock: -1
	// for a permit that never expires, 0 once the lease ended.
	LeaseLeftMs int64 `json:"lease_left_ms"`
	// Expired marks a permit whose lease ended: still stored, it is given
	// back by the next operation on the semaphore, by any client.
	Expired bool `json:"expired,omitempty"`
}

// IsSyncKind reports whether kind is a semaphore, a latch, or a counter
// that is one or the other.
func IsSyncKind(kind string) bool {
	return kinds.IsSemaphore(kind) || kind == kinds.Latch || kind == kinds.Counter
}

// syncKind names the semaphore or latch kind the facts show, given the
// lock kind DetectKind found and inspect's --kind hint. It reports false
// for locks, and for keys that are no Redisson object at all.
//
// An expirable semaphore with acquired permits is told by its sorted set
// {NAME}:timeout. Otherwise a string key holding an integer is a counter:
// a semaphore (an expirable one with no permit acquired) or a latch, as
// the hint says, or kinds.Counter with no hint. With a hint, a name with
// nothing under it is shown as that kind, not set up or open.
func syncKind(f *Facts, lockKind, hint string) (string, bool) {
	if lockKind != kinds.Unknown && lockKind != kinds.None {
		return "", false
	}
	if f.PermitsType == "zset" {
		return kinds.Expirable, true
	}
	_, isInt := ParseCounter(f.value)
	switch {
	case f.KeyType == "string" && isInt && hint == "":
		return kinds.Counter, true
	case f.KeyType == "string" && isInt, f.KeyType == "none" && hint != "":
		return hint, true
	}
	return "", false
}

// ParseCounter parses the value of a semaphore's or latch's key.
func ParseCounter(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// decodeSync turns the facts about a semaphore, a latch or a counter of
// one of them into a report.
func decodeSync(f *Facts, kind, hint string) Report {
	r := Report{Name: f.Name, Kind: kind, Holders: []Holder{}, TTLms: max(f.pttl, 0)}
	if f.pttl == -1 {
		r.TTLms = -1
	}
	n, _ := ParseCounter(f.value)
	switch f.KeyType {
	case "string":
		if _, ok := ParseCounter(f.value); !ok {
			r.Notes = append(r.Notes, fmt.Sprintf("the key holds %s, not an integer: no free permit can be counted", quoteShort(f.value)))
		}
	case "none":
		r.Notes = append(r.Notes, noKeyNote(f, kind))
	default:
		r.KeyType = f.KeyType
		r.Notes = append(r.Notes, fmt.Sprintf("the key is a %s, not a string holding the count of free permits", f.KeyType))
	}
	switch kind {
	case kinds.Semaphore, kinds.Expirable:
		r.Permits = &n
	case kinds.Latch:
		r.Count = &n
	case kinds.Counter:
		count := n
		r.Permits, r.Count = &n, &count
	}
	permitsKey := keys.Suffix(f.Name, keys.PermitsSuffix)
	switch {
	case kind == kinds.Expirable:
		r.Notes = append(r.Notes, decodePermits(f, &r)...)
	case f.PermitsType != "none" && f.PermitsType != "":
		r.Notes = append(r.Notes, fmt.Sprintf("%s is a %s, not the sorted set of an expirable semaphore's permits", permitsKey, f.PermitsType))
	}
	if hint != "" && hint != kind && !(hint == kinds.Semaphore && kind == kinds.Expirable) {
		r.Notes = append(r.Notes, fmt.Sprintf("--kind %s does not apply: %s exists, so this is an expirable semaphore", hint, permitsKey))
	}
	for _, e := range f.replyErrors {
		r.Notes = append(r.Notes, "Redis replied with an error (did the key change meanwhile?): "+e)
	}
	return r
}

// noKeyNote explains a kind shown for a name whose key does not exist.
func noKeyNote(f *Facts, kind string) string {
	switch {
	case kind == kinds.Latch:
		return "there is no key: the latch is open (or was never set)"
	case f.PermitsType == "zset":
		return "there is no key counting the free permits: none is free until one is released"
	}
	return "there is no key: the semaphore is not set up, and no permit is free"
}

// decodePermits fills in an expirable semaphore's acquired permits and
// returns notes on them.
func decodePermits(f *Facts, r *Report) []string {
	var notes []string
	expired := 0
	now := f.now.UnixMilli()
	for _, z := range f.permits {
		p := Permit{ID: hex.EncodeToString([]byte(z.Member))}
		if len(z.Member) != 16 {
			notes = append(notes, fmt.Sprintf("permit %s is %d bytes long, not 16: no id Redisson makes", p.ID, len(z.Member)))
		}
		switch s := z.Score; {
		case s == NeverExpires:
			p.LeaseLeftMs = -1
		case math.IsNaN(s) || math.IsInf(s, 0) || s < 0 || s >= 1e15:
			notes = append(notes, fmt.Sprintf("permit %s has score %v: no expiry in epoch milliseconds", p.ID, s))
		default:
			p.ExpiryMs = int64(s)
			// Redisson reclaims a permit once its expiry is <= now.
			if left := p.ExpiryMs - now; left > 0 {
				p.LeaseLeftMs = left
			} else {
				p.Expired = true
				expired++
			}
		}
		r.Acquired = append(r.Acquired, p)
	}
	if n := int64(len(f.permits)); f.permitsLen > n {
		notes = append(notes, fmt.Sprintf("%d permits are acquired; the %d that expire first are shown", f.permitsLen, n))
	}
	if expired > 0 {
		notes = append(notes, fmt.Sprintf("%s expired but not given back yet: the next operation on the semaphore, "+
			"by any client, gives them back (expiries are the acquiring clients' clocks; the time left is this host's)",
			cli.Plural(expired, "acquired permit")))
	}
	return notes
}

// quoteShort quotes s for a note, cut to 40 bytes.
func quoteShort(s string) string {
	if len(s) > 40 {
		return strconv.Quote(s[:40]) + "..."
	}
	return strconv.Quote(s)
}

// syncRows returns the table rows of a semaphore, latch or counter report:
// one for the object, then one per acquired permit. Each row has the
// table's cells after LOCK, KIND and TTL.
func syncRows(r *Report) [][]string {
	var detail string
	switch {
	case r.Kind == kinds.Counter && r.Permits != nil:
		n := *r.Permits
		state := "closed"
		if n <= 0 {
			state = "open"
		}
		detail = fmt.Sprintf("%d: as a semaphore, %s available; as a latch, count %d (%s); --kind tells which",
			n, cli.Plural(int(n), "permit"), n, state)
	case r.Kind == kinds.Latch && r.Count != nil:
		state := "closed"
		if *r.Count <= 0 {
			state = "open"
		}
		detail = fmt.Sprintf("count %d: %s", *r.Count, state)
	case r.Permits != nil:
		detail = cli.Plural(int(*r.Permits), "permit") + " available"
		if r.Kind == kinds.Expirable {
			detail += ", " + strconv.Itoa(len(r.Acquired)) + " acquired"
		}
	}
	if r.Subscribers > 0 {
		detail += ", " + strconv.FormatInt(r.Subscribers, 10) + " subscribed (waiting)"
	}
	rows := [][]string{{"-", "-", "-", "-", detail}}
	for _, p := range r.Acquired {
		lease := "lease left " + FormatTTL(time.Duration(p.LeaseLeftMs)*time.Millisecond)
		switch {
		case p.LeaseLeftMs < 0:
			lease = "no expiry"
		case p.Expired:
			lease = "lease ended " + time.UnixMilli(p.ExpiryMs).Format(TableTime) + "; EXPIRED: given back by the next operation"
		}
		rows = append(rows, []string{rolePermit, "-", "-", "-", "id " + p.ID + ", " + lease})
	}
	return rows
}
