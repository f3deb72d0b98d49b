package inspect

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/kinds"
	"github.com/interlock-go/interlock/internal/keys"
)

// A rate limiter (Redisson's RRateLimiter) called N is the hash N, its
// config (rate, interval, type, keepAliveTime), and its state: the string
// {N}:value, the free permits, and the sorted set {N}:permits, the
// permits taken, each member one byte L, L random bytes, then the permits
// as 4 bytes little-endian, scored with the taker's clock in epoch ms. A
// PER_CLIENT limiter keeps its state per client id instead, under
// {N}:value:<id> and {N}:permits:<id>.

// The fields of a rate limiter's config hash.
var rateFields = []string{"rate", "interval", "type", "keepAliveTime"}

// maxRateClients bounds the clients of a PER_CLIENT limiter inspect reads.
const maxRateClients = 100

// Rate types as the config hash stores them (Redisson's RateType
// ordinals) and as inspect names them (RateType's names).
const (
	RateOverall   = "OVERALL"
	RatePerClient = "PER_CLIENT"
)

// rateState is what Redis holds of one window of a rate limiter: the
// overall one, or one client's.
type rateState struct {
	clientID    string // "" for the overall window
	valueType   string // TYPE of the free count
	value       string // its value, when it is a string
	valuePTTL   int64
	permitsType string           // TYPE of the taken permits' sorted set
	entries     []rueidis.ZScore // its first maxPermits members, oldest first
	entriesLen  int64
	permitsPTTL int64
}

// rateValueKey and ratePermitsKey are the keys of a window: the overall
// one for client "", else that client's.
func rateValueKey(name, client string) string {
	k := keys.Suffix(name, keys.RateValueSuffix)
	if client != "" {
		k = keys.Suffix(k, client)
	}
	return k
}

func ratePermitsKey(name, client string) string {
	k := keys.Suffix(name, keys.RatePermitsSuffix)
	if client != "" {
		k = keys.Suffix(k, client)
	}
	return k
}

// rateStateCmds returns the reads of one window, which readRateState
// sorts out.
func rateStateCmds(b rueidis.Builder, name, client string) rueidis.Commands {
	vk, pk := rateValueKey(name, client), ratePermitsKey(name, client)
	return rueidis.Commands{
		b.Type().Key(vk).Build(),
		b.Get().Key(vk).Build(),
		b.Pttl().Key(vk).Build(),
		b.Type().Key(pk).Build(),
		b.Zcard().Key(pk).Build(),
		b.Zrange().Key(pk).Min("0").Max(strconv.Itoa(maxPermits - 1)).Withscores().Build(),
		b.Pttl().Key(pk).Build(),
	}
}

// readRateState reads the replies of rateStateCmds.
func readRateState(r *replies, res []rueidis.RedisResult, name, client string) rateState {
	vk, pk := rateValueKey(name, client), ratePermitsKey(name, client)
	s := rateState{clientID: client}
	s.valueType = r.str(res[0], "TYPE "+vk)
	if s.valueType == "string" {
		s.value = r.str(res[1], "GET "+vk)
	}
	s.valuePTTL = r.int(res[2], "PTTL "+vk)
	s.permitsType = r.str(res[3], "TYPE "+pk)
	if s.permitsType == "zset" {
		s.entriesLen = r.int(res[4], "ZCARD "+pk)
		s.entries = r.zscores(res[5], "ZRANGE "+pk)
	}
	s.permitsPTTL = r.int(res[6], "PTTL "+pk)
	return s
}

// perClient reports whether the facts show a PER_CLIENT limiter's config.
func perClient(f *Facts) bool {
	return f.KeyType == "hash" && f.Fields["type"] == "1" && IsRateConfig(f.Fields)
}

// isRateConfig reports whether a hash's fields are a rate limiter's
// config: a rate or an interval, and no field a config has not.
func IsRateConfig(fields map[string]string) bool {
	_, rate := fields["rate"]
	_, interval := fields["interval"]
	if !rate && !interval {
		return false
	}
	for f := range fields {
		if !slices.Contains(rateFields, f) {
			return false
		}
	}
	return true
}

// isRateLimiter reports whether the facts show a rate limiter: its config
// hash, or with no key of the name its taken permits' sorted set, every
// member of it read shaped as one.
func isRateLimiter(f *Facts) bool {
	if f.KeyType == "hash" {
		return IsRateConfig(f.Fields)
	}
	if f.KeyType != "none" || f.rate.permitsType != "zset" || len(f.rate.entries) == 0 {
		return false
	}
	for _, z := range f.rate.entries {
		if _, ok := entryPermits(z.Member); !ok {
			return false
		}
	}
	return true
}

// probeRateClients reads the windows of a PER_CLIENT limiter's clients:
// those of f.RateClients when ls found them, else those a SCAN of the
// name's keys finds.
func probeRateClients(ctx context.Context, rc rueidis.Client, f *Facts, r *replies) error {
	if !perClient(f) {
		return nil
	}
	ids := f.RateClients
	if ids == nil {
		var err error
		if ids, err = scanRateClients(ctx, rc, f.Name); err != nil {
			return err
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if len(ids) > maxRateClients {
		f.rateClientsLeft = len(ids) - maxRateClients
		ids = ids[:maxRateClients]
	}
	if len(ids) == 0 {
		return nil
	}
	b := rc.B()
	var cmds rueidis.Commands
	for _, id := range ids {
		cmds = append(cmds, rateStateCmds(b, f.Name, id)...)
	}
	res := rc.DoMulti(ctx, cmds...)
	for i, id := range ids {
		f.rateClients = append(f.rateClients, readRateState(r, res[i*7:i*7+7], f.Name, id))
	}
	return r.err
}

// scanRateClients returns the client ids of the keys {N}:value:<id> and
// {N}:permits:<id>, found by SCAN on every node (a cluster's replicas
// too: the ids are deduplicated).
func scanRateClients(ctx context.Context, rc rueidis.Client, name string) ([]string, error) {
	base := keys.Suffix(name, "")
	match := quoteGlob(base) + "*"
	seen := map[string]bool{}
	nodes := rc.Nodes()
	for _, addr := range slices.Sorted(maps.Keys(nodes)) {
		n := nodes[addr]
		var cursor uint64
		for {
			e, err := n.Do(ctx, n.B().Scan().Cursor(cursor).Match(match).Count(1000).Build()).AsScanEntry()
			if err != nil {
				return nil, fmt.Errorf("SCAN on %s: %w", addr, err)
			}
			for _, k := range e.Elements {
				if id := rateClientOf(name, k); id != "" {
					seen[id] = true
				}
			}
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

// rateClientOf returns the client id of key when it is one of the
// per-client keys of the rate limiter name, {name}:value:<id> or
// {name}:permits:<id>; else "".
func rateClientOf(name, key string) string {
	for _, suffix := range []string{keys.RateValueSuffix, keys.RatePermitsSuffix} {
		if id, ok := strings.CutPrefix(key, keys.Suffix(name, suffix)+":"); ok && id != "" {
			return id
		}
	}
	return ""
}

// quoteGlob quotes s for SCAN's MATCH: it matches s alone.
func quoteGlob(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// RateLimit is inspect's report of a rate limiter.
type RateLimit struct {
	// Type is OVERALL or PER_CLIENT (Redisson's RateType); "" when the
	// config is missing or does not parse.
	Type string `json:"type"`
	// Rate is the permits per interval.
	Rate int64 `json:"rate"`
	// IntervalMs is the interval in milliseconds.
	IntervalMs int64 `json:"interval_ms"`
	// KeepAliveMs is the keep-alive in milliseconds: the keys expire after
	// that long without an acquisition; 0 for none.
	KeepAliveMs int64 `json:"keep_alive_ms"`
	// Overall is the one window of an OVERALL limiter.
	Overall *RateWindow `json:"overall,omitempty"`
	// Clients are the windows of a PER_CLIENT limiter, one per client id
	// found, sorted by id.
	Clients []RateWindow `json:"clients,omitempty"`
}

// RateWindow is the state of one window of a rate limiter: the overall
// one, or one client's. The window is the last interval on inspect's
// clock; the takers' clocks stamped the permits.
type RateWindow struct {
	// ClientID is the client's id (a RedissonClient's, or an interlock
	// Client's); "" for the overall window.
	ClientID string `json:"client_id,omitempty"`
	// Free is the permits an acquisition now would find free: the stored
	// count with the permits that left the window given back, or the rate
	// when nothing is stored yet.
	Free int64 `json:"free_permits"`
	// Stored is the count of free permits as stored ({N}:value); absent
	// when there is none.
	Stored *int64 `json:"stored_free,omitempty"`
	// Taken is the permits taken within the window, in Acquisitions
	// acquisitions.
	Taken        int64 `json:"taken"`
	Acquisitions int64 `json:"acquisitions"`
	// NextFreeMs is the time until the oldest acquisition in the window
	// leaves it, its permits free again; 0 when there is none.
	NextFreeMs int64 `json:"next_free_ms,omitempty"`
	// ValueTTLms and PermitsTTLms are the PTTLs of the free count and of
	// the taken permits' sorted set: -1 no expiry, 0 no key.
	ValueTTLms   int64 `json:"value_ttl_ms"`
	PermitsTTLms int64 `json:"permits_ttl_ms"`
}

// parseRateConfig reads a config hash into r; it returns what does not
// parse, as notes.
func parseRateConfig(fields map[string]string, r *RateLimit) []string {
	var notes []string
	num := func(name string, optional bool) (int64, bool) {
		v, ok := fields[name]
		if !ok {
			if !optional {
				notes = append(notes, fmt.Sprintf("the config has no field %s: Redisson reads it as not initialized", name))
			}
			return 0, optional
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			notes = append(notes, fmt.Sprintf("config field %s = %s is no count", name, quoteShort(v)))
			return 0, false
		}
		return n, true
	}
	rate, okRate := num("rate", false)
	interval, okInterval := num("interval", false)
	keep, okKeep := num("keepAliveTime", true)
	typ, okType := num("type", false)
	switch {
	case okType && typ == 0:
		r.Type = RateOverall
	case okType && typ == 1:
		r.Type = RatePerClient
	case okType:
		notes = append(notes, fmt.Sprintf("config field type = %d is neither 0 (OVERALL) nor 1 (PER_CLIENT)", typ))
	}
	if okRate {
		r.Rate = rate
	}
	if okInterval {
		r.IntervalMs = interval
	}
	if okKeep {
		r.KeepAliveMs = keep
	}
	if okRate && okInterval && (rate < 1 || interval < 1) {
		notes = append(notes, fmt.Sprintf("rate %d per %dms: no permit is ever granted", rate, interval))
	}
	if !(okRate && okInterval && okType) {
		r.Type = "" // no acquisition can work with it
	}
	return notes
}

// decodeRateLimit turns the facts about a rate limiter into a report.
func decodeRateLimit(f *Facts) Report {
	r := Report{Name: f.Name, Kind: kinds.RateLimit, Holders: []Holder{}, TTLms: max(f.pttl, 0)}
	if f.pttl == -1 {
		r.TTLms = -1
	}
	rl := &RateLimit{}
	r.RateLimit = rl
	if f.KeyType == "hash" {
		r.Notes = append(r.Notes, parseRateConfig(f.Fields, rl)...)
	} else {
		r.Notes = append(r.Notes, fmt.Sprintf("there is no config hash %s: the rate limiter is not set (deleted, or expired), "+
			"and every acquisition fails until one is set", f.Name))
	}
	interval := rl.IntervalMs
	switch rl.Type {
	case RateOverall:
		w, notes := decodeWindow(f, f.rate, rl.Rate, interval)
		rl.Overall = &w
		r.Notes = append(r.Notes, notes...)
	case RatePerClient:
		rl.Clients = []RateWindow{}
		for _, s := range f.rateClients {
			w, notes := decodeWindow(f, s, rl.Rate, interval)
			rl.Clients = append(rl.Clients, w)
			r.Notes = append(r.Notes, notes...)
		}
		if f.rateClientsLeft > 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("%d more clients have keys: the first %d by id are shown", f.rateClientsLeft, maxRateClients))
		}
		if f.rate.valueType == "string" || f.rate.permitsType == "zset" {
			r.Notes = append(r.Notes, "the overall window's keys are left from when the limiter was OVERALL; a PER_CLIENT limiter does not use them")
		}
	default:
		if f.rate.permitsType == "zset" {
			w, notes := decodeWindow(f, f.rate, math.MaxInt64, interval)
			rl.Overall = &w
			r.Notes = append(r.Notes, notes...)
		}
	}
	for _, e := range f.replyErrors {
		r.Notes = append(r.Notes, "Redis replied with an error (did the limiter change meanwhile?): "+e)
	}
	return r
}

// decodeWindow decodes one window, as an acquisition now (on inspect's
// clock) would find it: the permits taken more than an interval ago are
// given back, capped by the rate as Redisson's acquisition does.
func decodeWindow(f *Facts, s rateState, rate, interval int64) (RateWindow, []string) {
	var notes []string
	who := "the limiter"
	if s.clientID != "" {
		who = "client " + s.clientID
	}
	w := RateWindow{ClientID: s.clientID, ValueTTLms: ttlOf(s.valuePTTL), PermitsTTLms: ttlOf(s.permitsPTTL)}
	switch s.valueType {
	case "", "none":
	case "string":
		if n, ok := ParseCounter(s.value); ok {
			w.Stored = &n
		} else {
			notes = append(notes, fmt.Sprintf("%s: %s holds %s, no count of free permits: every acquisition fails",
				who, rateValueKey(f.Name, s.clientID), quoteShort(s.value)))
		}
	default:
		notes = append(notes, fmt.Sprintf("%s: %s is a %s, not a count of free permits", who, rateValueKey(f.Name, s.clientID), s.valueType))
	}
	switch s.permitsType {
	case "", "none", "zset":
	default:
		notes = append(notes, fmt.Sprintf("%s: %s is a %s, not a sorted set of taken permits", who, ratePermitsKey(f.Name, s.clientID), s.permitsType))
	}
	now := f.now.UnixMilli()
	cut := now - interval
	var back, inWindow int64
	var oldest float64 = -1
	bad := 0
	for _, z := range s.entries {
		p, ok := entryPermits(z.Member)
		if !ok || math.IsNaN(z.Score) || math.IsInf(z.Score, 0) {
			bad++
			continue
		}
		switch {
		case z.Score < 0:
		case z.Score <= float64(cut):
			back += p
		default:
			inWindow += p
			w.Acquisitions++
			if oldest < 0 {
				oldest = z.Score
			}
		}
	}
	if bad > 0 {
		notes = append(notes, fmt.Sprintf("%s: %d members of %s are no taken permits (a length byte, that many bytes, 4 bytes of permits)",
			who, bad, ratePermitsKey(f.Name, s.clientID)))
	}
	if int64(len(s.entries)) < s.entriesLen {
		notes = append(notes, fmt.Sprintf("%s: %d acquisitions are stored; the oldest %d are counted", who, s.entriesLen, len(s.entries)))
	}
	w.Taken = inWindow
	if oldest >= 0 {
		w.NextFreeMs = max(int64(oldest)+interval-now, 0)
	}
	switch {
	case w.Stored == nil:
		w.Free = rate // the first acquisition sets the count to the rate
	case back == 0:
		w.Free = *w.Stored
	case *w.Stored+back > rate:
		w.Free = rate - inWindow
	default:
		w.Free = *w.Stored + back
	}
	if rate == math.MaxInt64 {
		w.Free = 0 // no config: nothing is granted
	}
	return w, notes
}

// entryPermits reads the permits of a member of the taken permits' sorted
// set: byte L, L bytes, then 4 bytes little-endian.
func entryPermits(m string) (int64, bool) {
	if len(m) < 1 {
		return 0, false
	}
	l := int(m[0])
	if len(m) != 1+l+4 {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint32([]byte(m[1+l:]))), true
}

// ttlOf turns a PTTL into a report's TTL: -1 no expiry, 0 no key.
func ttlOf(pttl int64) int64 {
	if pttl < -1 {
		return 0
	}
	return pttl
}

// rateMisfit says what makes the facts no rate limiter, or "".
func rateMisfit(f *Facts) string {
	switch f.KeyType {
	case "none", "":
	case "hash":
		if !IsRateConfig(f.Fields) {
			return holdsKey(f)
		}
		var r RateLimit
		if notes := parseRateConfig(f.Fields, &r); len(notes) > 0 {
			return "its config does not parse (" + notes[0] + ")"
		}
	default:
		return holdsKey(f)
	}
	vk, pk := rateValueKey(f.Name, ""), ratePermitsKey(f.Name, "")
	switch _, isInt := ParseCounter(f.rate.value); {
	case f.rate.valueType == "" || f.rate.valueType == "none":
	case f.rate.valueType != "string" || !isInt:
		return fmt.Sprintf("%s holds %s, not a rate limiter's count of free permits", vk, describeShape(f.rate.valueType, f.rate.value))
	}
	if t := f.rate.permitsType; t != "" && t != "none" && t != "zset" {
		return fmt.Sprintf("%s holds %s, not a rate limiter's taken permits (a sorted set)", pk, typeNoun(t))
	}
	return ""
}

// describeShape names what a key holds: a string's value, or its type.
func describeShape(t, value string) string {
	if t == "string" {
		return "the string " + quoteShort(value)
	}
	return typeNoun(t)
}

// rateRows returns the table rows of a rate limiter report: one for the
// limiter, then one per client of a PER_CLIENT limiter. Each row has the
// table's cells after LOCK, KIND and TTL.
func rateRows(r *Report) [][]string {
	rl := r.RateLimit
	if rl == nil || rl.Type == "" {
		detail := "not set"
		if rl != nil && rl.Overall != nil {
			detail += "; " + windowDetail(*rl.Overall, false)
		}
		return [][]string{{"-", "-", "-", "-", detail}}
	}
	detail := RateSummary(rl)
	switch {
	case rl.Overall != nil:
		detail += ": " + windowDetail(*rl.Overall, true)
	case len(rl.Clients) == 0:
		detail += ": no client has taken permits"
	default:
		detail += ": " + cli.Plural(len(rl.Clients), "client")
	}
	rows := [][]string{{"-", "-", "-", "-", detail}}
	for _, w := range rl.Clients {
		rows = append(rows, []string{roleClient, cli.Short(w.ClientID), "-", "-", windowDetail(w, true)})
	}
	return rows
}

// roleClient is the role of a PER_CLIENT limiter's client in the table.
const roleClient = "client"

// RateSummary says what a rate limiter's config is, as in "OVERALL 10
// per 1s, keep-alive 1m0s".
func RateSummary(rl *RateLimit) string {
	s := fmt.Sprintf("%s %d per %v", rl.Type, rl.Rate, time.Duration(rl.IntervalMs)*time.Millisecond)
	if rl.Type == RatePerClient {
		s += " each"
	}
	if rl.KeepAliveMs > 0 {
		s += ", keep-alive " + (time.Duration(rl.KeepAliveMs) * time.Millisecond).String()
	}
	return s
}

// windowDetail describes a window: its free permits, the permits taken in
// it, and when the oldest comes free; with ttls, the state keys' TTLs
// when they expire.
func windowDetail(w RateWindow, ttls bool) string {
	s := fmt.Sprintf("%d free now, %d taken in the window", w.Free, w.Taken)
	if w.Acquisitions > 0 {
		s += fmt.Sprintf(" (%s, the oldest frees in %s)", cli.Plural(int(w.Acquisitions), "acquisition"),
			FormatTTL(time.Duration(w.NextFreeMs)*time.Millisecond))
	}
	if ttls && (w.ValueTTLms > 0 || w.PermitsTTLms > 0) {
		s += fmt.Sprintf("; state TTL %s", FormatTTL(time.Duration(max(w.ValueTTLms, w.PermitsTTLms))*time.Millisecond))
	}
	return s
}
