package inspect

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/interlock-go/interlock/cmd/interlock/internal/kinds"
	"github.com/interlock-go/interlock/internal/keys"
)

// Roles of the rows of a report: who holds the lock, who waits for it.
const (
	roleHolder = "holder" // of a reentrant, fair or fenced lock
	roleReader = "reader" // a read/write lock's reader
	roleWriter = "writer" // a read/write lock's writer
	roleWaiter = "waiter" // a fair lock's queued waiter
)

// Report is inspect's answer for one lock, printed as table rows or
// as one JSON object.
type Report struct {
	// Name is the name inspected: the key (with --name-prefix's prefix).
	Name string `json:"name"`
	// Kind is the kind found (package kinds): a lock's, a semaphore's,
	// a latch's, or none or unknown.
	Kind string `json:"kind"`
	// Locked reports whether a lock is held: false for a semaphore or a
	// latch.
	Locked bool `json:"locked"`
	// TTLms is the remaining time to live of the name's key (the lock, or
	// a semaphore's or latch's counter) in milliseconds: 0 when there is
	// no such key, -1 when it has no expiry.
	TTLms int64 `json:"ttl_ms"`
	// Mode is a read/write lock's "mode" field: "read" or "write".
	Mode string `json:"mode,omitempty"`
	// Holders are the fields of a lock hash, sorted by field.
	Holders []Holder `json:"holders"`
	// Queue is a fair lock's waiters, first in line first.
	Queue []Waiter `json:"queue,omitempty"`
	// KeyType is the Redis type of a lock key that is not a hash.
	KeyType string `json:"key_type,omitempty"`
	// FenceToken is the last fencing token a fenced lock handed out: the
	// holder's, while it is locked.
	FenceToken string `json:"fence_token,omitempty"`
	// Permits is a semaphore's number of free permits as stored (an
	// expirable semaphore's expired permits are not yet counted back in);
	// for a "semaphore/latch" counter, its value read as permits.
	Permits *int64 `json:"permits,omitempty"`
	// Count is a latch's count (0 or less: open); for a "semaphore/latch"
	// counter, its value read as a count.
	Count *int64 `json:"count,omitempty"`
	// Acquired are an expirable semaphore's acquired permits, the soonest
	// to expire first.
	Acquired []Permit `json:"acquired,omitempty"`
	// RateLimit is a rate limiter's config and windows.
	RateLimit *RateLimit `json:"rate_limiter,omitempty"`
	// Subscribers is the number of connections subscribed to the name's
	// channels, over every node: clients waiting for it (a client that has
	// just stopped waiting may still count). A fair lock's waiters listen
	// on channels of their own, and show in Queue.
	Subscribers int64 `json:"subscribers"`
	// Notes say what was found but is not decoded, or looks wrong.
	Notes []string `json:"notes,omitempty"`
}

// holder is one field of a lock hash: an owner and its hold count.
type Holder struct {
	// Field is the hash field as stored: "<client id>:<owner id>" with
	// ":write" appended for a write holder.
	Field string `json:"field"`
	// ClientID is the id of the interlock Client or RedissonClient.
	ClientID string `json:"client_id"`
	// OwnerID is the owner within that client: a Java thread id, or an
	// interlock owner id (a goroutine id, interlock.WithOwner's id, or the
	// pid of "interlock run").
	OwnerID int64 `json:"owner_id"`
	// Write marks a read/write lock's write holder.
	Write bool `json:"write,omitempty"`
	// Holds is the hold count: how often the owner (re-)entered the lock.
	Holds int64 `json:"holds"`
	// ReadHoldTTLms are the PTTLs of a reader's read holds' keys
	// {LOCK}:<field>:rwlock_timeout:<k>, hold 1 first, in milliseconds: -2
	// for a key that is gone (a dead hold), -1 for one with no expiry.
	ReadHoldTTLms []int64 `json:"read_hold_ttl_ms,omitempty"`
	// Stale marks a reader all of whose read holds' keys are gone: a
	// reader that died without unlocking.
	Stale bool `json:"stale,omitempty"`
}

// waiter is one entry of a fair lock's queue.
type Waiter struct {
	// Position is the place in the queue, 1 for the head.
	Position int `json:"position"`
	// Owner is the entry as stored, "<client id>:<owner id>".
	Owner string `json:"owner"`
	// ClientID is the id of the waiter's client, as in a Holder.
	ClientID string `json:"client_id"`
	// OwnerID is the waiter within that client, as in a Holder.
	OwnerID int64 `json:"owner_id"`
	// DeadlineMs is the waiter's deadline in redisson_lock_timeout:{LOCK},
	// in epoch milliseconds of its client's clock; 0 when it has none.
	DeadlineMs int64 `json:"deadline_ms,omitempty"`
	// Deadline is DeadlineMs as an RFC 3339 time on inspect's clock.
	Deadline string `json:"deadline,omitempty"`
	// RemainingMs is the time left until the deadline on inspect's clock
	// (negative once it passed); 0 when there is no deadline.
	RemainingMs int64 `json:"remaining_ms"`
	// Stale marks a waiter whose deadline has passed: taken for dead, it
	// is dropped once it is at the head of the queue.
	Stale bool `json:"stale,omitempty"`
}

// TTL returns the report's TTL as a duration (-1 for none).
func (r *Report) TTL() time.Duration {
	if r.TTLms < 0 {
		return -1
	}
	return time.Duration(r.TTLms) * time.Millisecond
}

// kindRule recognises one lock kind from the facts. Rules are tried in
// order and the first match names the kind; Decode then decodes whatever
// the facts hold, whatever the kind.
type kindRule struct {
	kind  string
	match func(f *Facts) bool
}

// kindRules lists the rules, most specific first: a read/write lock says
// so in its hash; fenced and fair locks are plain hashes with keys beside
// them (which outlive the hash: a fenced lock's token forever, a fair
// lock's queue while anyone waits), so they come before "reentrant". A
// fair lock that nobody waits for is indistinguishable from a reentrant
// one, and shows as such.
var kindRules = []kindRule{
	{kinds.ReadWrite, HasMode},
	{kinds.RateLimit, isRateLimiter},
	{kinds.Fenced, func(f *Facts) bool { return f.tokenType != "none" && f.tokenType != "" }},
	{kinds.Fair, hasQueue},
	{kinds.Reentrant, func(f *Facts) bool { return f.KeyType == "hash" }},
	{kinds.None, func(f *Facts) bool { return f.KeyType == "none" }},
}

// HasMode reports whether the lock is a hash with a "mode" field: a
// read/write lock.
func HasMode(f *Facts) bool {
	_, ok := f.Fields["mode"]
	return f.KeyType == "hash" && ok
}

// hasQueue reports whether a fair lock's queue or deadlines exist.
func hasQueue(f *Facts) bool {
	return (f.queueType != "none" && f.queueType != "") || (f.timesType != "none" && f.timesType != "")
}

// DetectKind names the kind of lock the facts show.
func DetectKind(f *Facts) string {
	for _, r := range kindRules {
		if r.match(f) {
			return r.kind
		}
	}
	return kinds.Unknown
}

// Decode turns the facts about one lock, semaphore or latch into a report;
// hint (inspect's --kind, or "") says what a counter that could be either
// is. It never fails: what does not look like a Redisson object is a note.
func Decode(f *Facts, hint string) Report {
	kind := DetectKind(f)
	if kind == kinds.RateLimit {
		r := decodeRateLimit(f)
		if hint != "" {
			r.Notes = append(r.Notes, fmt.Sprintf("--kind %s does not apply: this is a rate limiter", hint))
		}
		return r
	}
	if sk, ok := syncKind(f, kind, hint); ok {
		return decodeSync(f, sk, hint)
	}
	r := Report{Name: f.Name, Kind: kind, Holders: []Holder{}}
	switch f.KeyType {
	case "none", "":
	case "hash":
		r.Locked = true
		r.TTLms = f.pttl
		r.Holders, r.Notes = decodeHolders(f.Fields, HasMode(f))
	case "string":
		r.Locked = true
		r.TTLms = f.pttl
		r.KeyType = f.KeyType
		r.Notes = append(r.Notes, fmt.Sprintf("the key is a string, not a hash, and holds %s, no integer: "+
			"not a Redisson lock, semaphore or latch", quoteShort(f.value)))
	default:
		r.Locked = true
		r.TTLms = f.pttl
		r.KeyType = f.KeyType
		r.Notes = append(r.Notes, fmt.Sprintf("the key is a %s, not a hash: not a Redisson lock", f.KeyType))
	}
	if r.TTLms < -1 {
		r.TTLms = 0 // the key vanished between TYPE and PTTL
	}
	if HasMode(f) {
		r.Notes = append(r.Notes, decodeReadWrite(f, &r)...)
	}
	if hasQueue(f) {
		r.Notes = append(r.Notes, decodeQueue(f, &r)...)
	}
	r.Notes = append(r.Notes, decodeToken(f, &r)...)
	r.Notes = append(r.Notes, mixedKinds(f, r.Kind)...)
	if f.PermitsType == "zset" {
		r.Notes = append(r.Notes, "Redis also holds acquired permits of an expirable semaphore under this name ("+
			keys.Suffix(f.Name, keys.PermitsSuffix)+")")
	}
	if hint != "" {
		r.Notes = append(r.Notes, fmt.Sprintf("--kind %s does not apply: this is no semaphore or latch", hint))
	}
	for _, e := range f.replyErrors {
		r.Notes = append(r.Notes, "Redis replied with an error (did the lock change meanwhile?): "+e)
	}
	return r
}

// decodeHolders splits every hash field except a read/write lock's "mode"
// into a holder, sorted by field. Fields that do not parse are reported in
// notes, never dropped silently.
func decodeHolders(fields map[string]string, readWrite bool) ([]Holder, []string) {
	holders := []Holder{}
	var notes []string
	for _, field := range slices.Sorted(maps.Keys(fields)) {
		if readWrite && field == "mode" {
			continue
		}
		h, err := parseHolder(field, fields[field])
		if err != nil {
			notes = append(notes, fmt.Sprintf("field %q: %v", field, err))
		}
		holders = append(holders, h)
	}
	return holders, notes
}

// parseHolder splits a hash field "<client id>:<owner id>[:write]" and its
// hold count. On error it still returns what it could parse.
func parseHolder(field, value string) (Holder, error) {
	h := Holder{Field: field}
	rest := field
	if base, ok := strings.CutSuffix(rest, ":write"); ok {
		rest, h.Write = base, true
	}
	holds, countErr := strconv.ParseInt(value, 10, 64)
	h.Holds = holds
	client, id, err := ParseOwner(rest)
	if err != nil {
		return h, err
	}
	h.ClientID, h.OwnerID = client, id
	switch {
	case countErr != nil:
		return h, fmt.Errorf("hold count %q is not an integer", value)
	case holds <= 0:
		return h, fmt.Errorf("hold count %d is not positive", holds)
	}
	return h, nil
}

// ParseOwner splits an owner string "<client id>:<owner id>".
func ParseOwner(owner string) (client string, id int64, err error) {
	i := strings.LastIndexByte(owner, ':')
	if i <= 0 {
		return "", 0, fmt.Errorf("not \"<client id>:<owner id>\"")
	}
	id, err = strconv.ParseInt(owner[i+1:], 10, 64)
	if err != nil {
		return "", 0, fmt.Errorf("owner id %q is not an integer", owner[i+1:])
	}
	return owner[:i], id, nil
}

// decodeReadWrite fills in a read/write lock's mode and its readers' read
// hold TTLs, and returns notes on what looks wrong.
func decodeReadWrite(f *Facts, r *Report) []string {
	var notes []string
	r.Mode = f.Fields["mode"]
	writers := 0
	for _, h := range r.Holders {
		if h.Write {
			writers++
		}
	}
	switch {
	case r.Mode == "write" && writers == 0:
		notes = append(notes, `mode is "write" but no field names a writer ("<client id>:<owner id>:write")`)
	case r.Mode == "read" && writers > 0:
		notes = append(notes, `mode is "read" but a field names a writer`)
	case r.Mode != "read" && r.Mode != "write":
		notes = append(notes, fmt.Sprintf(`mode %q is neither "read" nor "write"`, r.Mode))
	}
	if writers > 1 {
		notes = append(notes, fmt.Sprintf("%d fields name a writer; a read/write lock has one", writers))
	}
	byField := map[string]readerKeys{}
	for _, rk := range holdKeys(f) {
		byField[rk.field] = rk
	}
	for i := range r.Holders {
		h := &r.Holders[i]
		if h.Write {
			continue
		}
		rk, ok := byField[h.Field]
		if !ok {
			continue // a hold count that does not parse: noted already
		}
		live := false
		for _, k := range rk.keys {
			ttl, read := f.holdTTLs[k]
			if !read {
				ttl = -2 // probed nothing: the key's PTTL failed
			}
			h.ReadHoldTTLms = append(h.ReadHoldTTLms, ttl)
			live = live || ttl > 0 || ttl == -1
		}
		if int64(len(rk.keys)) < rk.holds {
			notes = append(notes, fmt.Sprintf("reader %s: %d read holds; the timeout keys of holds past the first %d were not read",
				h.Field, rk.holds, len(rk.keys)))
			continue
		}
		if !live {
			h.Stale = true
			notes = append(notes, fmt.Sprintf("reader %s: the timeout keys of all its read holds are gone: it died without unlocking "+
				"(the next read unlock drops the whole lock if no live reader remains)", h.Field))
		}
	}
	return notes
}

// decodeQueue fills in a fair lock's queue and returns notes on it.
func decodeQueue(f *Facts, r *Report) []string {
	var notes []string
	queueKey := keys.Prefix(keys.FairQueuePrefix, f.Name)
	timesKey := keys.Prefix(keys.FairTimeoutPrefix, f.Name)
	if f.queueType != "none" && f.queueType != "list" {
		notes = append(notes, fmt.Sprintf("%s is a %s, not a list", queueKey, f.queueType))
	}
	if f.timesType != "none" && f.timesType != "zset" {
		notes = append(notes, fmt.Sprintf("%s is a %s, not a sorted set", timesKey, f.timesType))
	}
	withDeadline := map[string]bool{}
	seen := map[string]int{}
	for i, owner := range f.queue {
		if seen[owner]++; seen[owner] == 2 {
			notes = append(notes, fmt.Sprintf("%s is queued more than once", owner))
		}
		w := Waiter{Position: i + 1, Owner: owner}
		var err error
		if w.ClientID, w.OwnerID, err = ParseOwner(owner); err != nil {
			notes = append(notes, fmt.Sprintf("waiter %d %q: %v", i+1, owner, err))
		}
		if d, ok := f.deadlines[owner]; ok && !math.IsNaN(d) && !math.IsInf(d, 0) && math.Abs(d) < 1e15 {
			withDeadline[owner] = true
			w.DeadlineMs = int64(d)
			deadline := time.UnixMilli(w.DeadlineMs)
			w.Deadline = deadline.Format(JSONTime)
			w.RemainingMs = deadline.Sub(f.now).Milliseconds()
			// Redisson drops the head when deadline <= now.
			w.Stale = w.DeadlineMs <= f.now.UnixMilli()
		} else {
			notes = append(notes, fmt.Sprintf("waiter %d %s has no usable deadline in %s: Redisson never drops it", i+1, owner, timesKey))
		}
		r.Queue = append(r.Queue, w)
	}
	if n := int64(len(f.queue)); f.queueLen > n {
		notes = append(notes, fmt.Sprintf("%d waiters are queued; the first %d are shown", f.queueLen, n))
	}
	if extra := f.timesLen - int64(len(withDeadline)); extra > 0 && f.queueLen <= int64(len(f.queue)) {
		notes = append(notes, fmt.Sprintf("%s holds %d deadline(s) of owners that are not queued", timesKey, extra))
	}
	if len(r.Queue) > 0 && !r.Locked {
		notes = append(notes, "the lock is free but waiters are queued: only the head of the queue may take it "+
			"(a waiter that died blocks the queue until its deadline)")
	}
	return notes
}

// decodeToken fills in a fenced lock's token and returns notes on it.
func decodeToken(f *Facts, r *Report) []string {
	switch f.tokenType {
	case "", "none":
		return nil
	case "string":
		r.FenceToken = f.token
		if n, err := strconv.ParseInt(f.token, 10, 64); err != nil || n < 0 {
			return []string{fmt.Sprintf("fencing token %q is not a non-negative integer", f.token)}
		}
		return nil
	}
	return []string{fmt.Sprintf("%s is a %s, not a string", keys.Prefix(keys.FenceTokenPrefix, f.Name), f.tokenType)}
}

// mixedKinds notes keys of other lock kinds than the one detected under
// the same name: leftovers of another use of the name, or of a mix-up.
func mixedKinds(f *Facts, kind string) []string {
	var notes []string
	for _, rule := range kindRules {
		switch rule.kind {
		case kinds.ReadWrite, kinds.Fenced, kinds.Fair:
			if rule.kind != kind && rule.match(f) {
				notes = append(notes, fmt.Sprintf("Redis also holds keys of a %s lock under this name", rule.kind))
			}
		}
	}
	return notes
}

// JSONTime is how deadlines are shown: RFC 3339 to the millisecond.
const JSONTime = "2006-01-02T15:04:05.000Z07:00"
