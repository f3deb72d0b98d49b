package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Lock kinds as inspect names them.
const (
	kindNone      = "none"       // nothing in Redis under this name
	kindFair      = "fair"       // RedissonFairLock
	kindReadWrite = "read/write" // RedissonReadWriteLock
	kindFenced    = "fenced"     // RedissonFencedLock
	kindUnknown   = "unknown"    // a key that is no Redisson lock
)

// facts is what Redis holds for one lock name, read in one round trip (see
// probe). Decoding the facts is separate from reading them so that it can
// be tested without Redis and extended kind by kind.
type facts struct {
	name       string
	keyType    string            // TYPE of the lock key: "none", "hash", ...
	pttl       int64             // PTTL of the lock key: -2 absent, -1 no expiry
	fields     map[string]string // the lock hash, when it is one
	fairQueue  bool              // redisson_lock_queue:{name} exists
	fairTimes  bool              // redisson_lock_timeout:{name} exists
	fenceToken string            // redisson_lock_token:{name}, "" when absent
}

// lockReport is inspect's answer for one lock, printed as a table row or
// as one JSON object.
type lockReport struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Locked bool   `json:"locked"`
	// TTLms is the lock's remaining time to live in milliseconds: 0 when it
	// is not locked, -1 when it is locked with no expiry.
	TTLms int64 `json:"ttl_ms"`
	// Mode is a read/write lock's "mode" field: "read" or "write".
	Mode    string   `json:"mode,omitempty"`
	Holders []holder `json:"holders"`
	// KeyType is the Redis type of a lock key that is not a hash.
	KeyType string `json:"key_type,omitempty"`
	// FenceToken is the last fencing token a fenced lock handed out.
	FenceToken string `json:"fence_token,omitempty"`
	// Notes say what was found but is not decoded, or looks wrong.
	Notes []string `json:"notes,omitempty"`
}

// holder is one field of a lock hash: an owner and its hold count.
type holder struct {
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
}

// ttl returns the report's TTL as a duration (-1 for none).
func (r *lockReport) ttl() time.Duration {
	if r.TTLms < 0 {
		return -1
	}
	return time.Duration(r.TTLms) * time.Millisecond
}

// kindRule recognises one lock kind from the facts. Rules are tried in
// order and the first match names the kind; the next lock kinds add a
// rule here, and their own decoding in decode.
type kindRule struct {
	kind  string
	match func(f *facts) bool
}

// kindRules lists the rules, most specific first: a fenced or fair lock
// is also a plain hash, so those are checked before "reentrant".
var kindRules = []kindRule{
	{kindFenced, func(f *facts) bool { return f.fenceToken != "" }},
	{kindFair, func(f *facts) bool { return f.fairQueue || f.fairTimes }},
	{kindReadWrite, func(f *facts) bool { _, ok := f.fields["mode"]; return f.keyType == "hash" && ok }},
	{kindReentrant, func(f *facts) bool { return f.keyType == "hash" }},
	{kindNone, func(f *facts) bool { return f.keyType == "none" }},
}

// detectKind names the kind of lock the facts show.
func detectKind(f *facts) string {
	for _, r := range kindRules {
		if r.match(f) {
			return r.kind
		}
	}
	return kindUnknown
}

// decode turns the facts about one lock into a report.
func decode(f *facts) lockReport {
	r := lockReport{Name: f.name, Kind: detectKind(f), Holders: []holder{}}
	switch f.keyType {
	case "none":
	case "hash":
		r.Locked = true
		r.TTLms = f.pttl
		r.Mode = f.fields["mode"]
		r.Holders, r.Notes = decodeHolders(f.fields, r.Kind == kindReadWrite)
	default:
		r.Locked = true
		r.TTLms = f.pttl
		r.KeyType = f.keyType
		r.Notes = append(r.Notes, fmt.Sprintf("the key is a %s, not a hash: not a Redisson lock", f.keyType))
	}
	if r.TTLms < -1 {
		r.TTLms = 0 // the key vanished between TYPE and PTTL
	}
	switch r.Kind {
	case kindFair:
		r.Notes = append(r.Notes, "fair lock: the waiter queue is not decoded yet")
	case kindFenced:
		r.FenceToken = f.fenceToken
		r.Notes = append(r.Notes, "fenced lock: decoded as reentrant; the token is the last one handed out")
	case kindReadWrite:
		r.Notes = append(r.Notes, "read/write lock: reader timeouts are not decoded yet")
	}
	return r
}

// decodeHolders splits every hash field except a read/write lock's "mode"
// into a holder, sorted by field. Fields that do not parse are reported in
// notes, never dropped silently.
func decodeHolders(fields map[string]string, readWrite bool) ([]holder, []string) {
	holders := []holder{}
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
func parseHolder(field, value string) (holder, error) {
	h := holder{Field: field}
	rest := field
	if base, ok := strings.CutSuffix(rest, ":write"); ok {
		rest, h.Write = base, true
	}
	holds, countErr := strconv.ParseInt(value, 10, 64)
	h.Holds = holds
	i := strings.LastIndexByte(rest, ':')
	if i <= 0 {
		return h, fmt.Errorf("not \"<client id>:<owner id>\"")
	}
	id, err := strconv.ParseInt(rest[i+1:], 10, 64)
	if err != nil {
		return h, fmt.Errorf("owner id %q is not an integer", rest[i+1:])
	}
	h.ClientID, h.OwnerID = rest[:i], id
	if countErr != nil {
		return h, fmt.Errorf("hold count %q is not an integer", value)
	}
	return h, nil
}
