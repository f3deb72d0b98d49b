package inspect

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"
	"github.com/interlock-go/interlock/internal/keys"
)

// Bounds on what inspect reads of one lock, so that a huge or corrupt
// lock costs a bounded amount; what is left out is said in a note.
const (
	maxWaiters  = 1000 // fair queue entries read
	maxHoldKeys = 1000 // reader timeout keys read
	maxPermits  = 1000 // acquired permits of an expirable semaphore read
)

// Facts is what Redis holds for one lock name (see Probe). Decoding the
// facts (Decode) is separate from reading them so that it can be tested
// without Redis.
type Facts struct {
	// Name is the name read: the key of the lock, semaphore or latch.
	Name string
	// now is this host's clock when the facts were read: fair-lock
	// deadlines are epoch milliseconds of the clients' clocks.
	now time.Time
	// KeyType is the TYPE of the name's key: "none", "hash", ...
	KeyType string
	pttl    int64 // PTTL of the name's key: -2 absent, -1 no expiry
	// Fields are the lock hash, when the key is one.
	Fields map[string]string
	value  string // the key's value, when it is a string (a semaphore's or latch's counter)

	queueType string   // TYPE of redisson_lock_queue:{name}
	queue     []string // its first maxWaiters entries, when it is a list
	queueLen  int64    // its length, when it is a list
	timesType string   // TYPE of redisson_lock_timeout:{name}
	timesLen  int64    // its size, when it is a sorted set
	// deadlines maps each queued owner that has a deadline in
	// redisson_lock_timeout:{name} to it (epoch ms, as stored).
	deadlines map[string]float64

	tokenType string // TYPE of redisson_lock_token:{name}
	token     string // its value, when it is a string

	// PermitsType is the TYPE of {name}:timeout, an expirable
	// semaphore's acquired permits.
	PermitsType string
	// permits are its first maxPermits members (raw ids) and scores
	// (expiries in epoch ms, or NeverExpires), soonest expiry first, when
	// it is a sorted set.
	permits    []rueidis.ZScore
	permitsLen int64 // its size, when it is a sorted set

	// holdTTLs maps each reader timeout key read (holdKeys) to its PTTL.
	holdTTLs map[string]int64

	// rate is a rate limiter's overall window: {name}:value and
	// {name}:permits.
	rate rateState
	// RateClients are the client ids whose windows a PER_CLIENT limiter's
	// probe reads; nil: those a SCAN finds.
	RateClients []string
	// rateClients are the windows read, by client id; rateClientsLeft
	// counts the clients found beyond maxRateClients.
	rateClients     []rateState
	rateClientsLeft int

	// replyErrors are error replies to reads (a key that changed type
	// between TYPE and the read): reported as notes.
	replyErrors []string
}

// Probe reads the facts about the lock, semaphore or latch called name, in
// at most two round trips to its node. It only reads: unlike Redisson's own
// reads of an expirable semaphore, it reclaims no expired permit.
func Probe(ctx context.Context, rc rueidis.Client, name string) (*Facts, error) {
	return ProbeClients(ctx, rc, name, nil)
}

// ProbeClients is Probe, but reads the windows of a PER_CLIENT rate
// limiter's clients of the ids given instead of those a SCAN finds (ls
// found them already); nil: SCAN.
func ProbeClients(ctx context.Context, rc rueidis.Client, name string, clients []string) (*Facts, error) {
	// First the key of the name and the keys beside it, then what those
	// name (the deadlines of the queued waiters, the TTLs of the read
	// holds). All the keys share the lock's cluster slot (keys.Check made
	// sure of it), so each pipeline goes to one node. The reads are not one
	// atomic snapshot: a lock that changes meanwhile can show, say, the TTL
	// of a key that has just vanished; Decode copes with that.
	queueKey := keys.Prefix(keys.FairQueuePrefix, name)
	timesKey := keys.Prefix(keys.FairTimeoutPrefix, name)
	tokenKey := keys.Prefix(keys.FenceTokenPrefix, name)
	permitsKey := keys.Suffix(name, keys.PermitsSuffix)
	b := rc.B()
	first := rueidis.Commands{
		b.Type().Key(name).Build(),
		b.Pttl().Key(name).Build(),
		b.Hgetall().Key(name).Build(),
		b.Type().Key(queueKey).Build(),
		b.Lrange().Key(queueKey).Start(0).Stop(maxWaiters - 1).Build(),
		b.Llen().Key(queueKey).Build(),
		b.Type().Key(timesKey).Build(),
		b.Zcard().Key(timesKey).Build(),
		b.Type().Key(tokenKey).Build(),
		b.Get().Key(tokenKey).Build(),
		b.Get().Key(name).Build(),
		b.Type().Key(permitsKey).Build(),
		b.Zcard().Key(permitsKey).Build(),
		b.Zrange().Key(permitsKey).Min("0").Max(strconv.Itoa(maxPermits - 1)).Withscores().Build(),
	}
	res := rc.DoMulti(ctx, append(first, rateStateCmds(b, name, "")...)...)
	f := &Facts{Name: name, now: time.Now(), RateClients: clients}
	// Each read is used only when TYPE said the key has the type it
	// reads; the others fail with WRONGTYPE or find nothing, as expected.
	r := replies{f: f}
	f.KeyType = r.str(res[0], "TYPE "+name)
	f.pttl = r.int(res[1], "PTTL "+name)
	f.queueType = r.str(res[3], "TYPE "+queueKey)
	f.timesType = r.str(res[6], "TYPE "+timesKey)
	f.tokenType = r.str(res[8], "TYPE "+tokenKey)
	if f.KeyType == "hash" {
		f.Fields = r.strMap(res[2], "HGETALL "+name)
	}
	if f.queueType == "list" {
		f.queue = r.strSlice(res[4], "LRANGE "+queueKey)
		f.queueLen = r.int(res[5], "LLEN "+queueKey)
	}
	if f.timesType == "zset" {
		f.timesLen = r.int(res[7], "ZCARD "+timesKey)
	}
	if f.tokenType == "string" {
		f.token = r.str(res[9], "GET "+tokenKey)
	}
	if f.KeyType == "string" {
		f.value = r.str(res[10], "GET "+name)
	}
	f.PermitsType = r.str(res[11], "TYPE "+permitsKey)
	if f.PermitsType == "zset" {
		f.permitsLen = r.int(res[12], "ZCARD "+permitsKey)
		f.permits = r.zscores(res[13], "ZRANGE "+permitsKey)
	}
	f.rate = readRateState(&r, res[14:], name, "")
	if r.err != nil {
		return nil, r.err
	}
	if err := probeRateClients(ctx, rc, f, &r); err != nil {
		return nil, err
	}

	// Second round: what the first one named.
	var cmds rueidis.Commands
	var waiters []string
	if f.timesLen > 0 {
		waiters = uniq(f.queue)
		for _, w := range waiters {
			cmds = append(cmds, b.Zscore().Key(timesKey).Member(w).Build())
		}
	}
	holdKeys := holdKeys(f)
	for _, rk := range holdKeys {
		for _, k := range rk.keys {
			cmds = append(cmds, b.Pttl().Key(k).Build())
		}
	}
	if len(cmds) == 0 {
		return f, nil
	}
	res = rc.DoMulti(ctx, cmds...)
	f.deadlines = map[string]float64{}
	for i, w := range waiters {
		if d, ok := r.float(res[i], "ZSCORE "+timesKey); ok {
			f.deadlines[w] = d
		}
	}
	res = res[len(waiters):]
	f.holdTTLs = map[string]int64{}
	for _, rk := range holdKeys {
		for _, k := range rk.keys {
			if ttl, ok := r.intOK(res[0], "PTTL "+k); ok {
				f.holdTTLs[k] = ttl
			}
			res = res[1:]
		}
	}
	return f, r.err
}

// replies sorts out the replies of a probe: the first failure to talk to
// Redis is kept in err (Probe then fails); an error reply is recorded in
// the facts, to become a note, and the read counts as finding nothing.
type replies struct {
	f   *Facts
	err error
}

// failed reports whether a reply failed, and records how.
func (r *replies) failed(err error, what string) bool {
	switch {
	case err == nil:
		return false
	case rueidis.IsRedisNil(err):
	case redisconn.IsErrorReply(err):
		r.f.replyErrors = append(r.f.replyErrors, fmt.Sprintf("%s: %v", what, err))
	case r.err == nil:
		r.err = err
	}
	return true
}

func (r *replies) str(res rueidis.RedisResult, what string) string {
	s, err := res.ToString()
	if r.failed(err, what) {
		return ""
	}
	return s
}

func (r *replies) int(res rueidis.RedisResult, what string) int64 {
	n, _ := r.intOK(res, what)
	return n
}

func (r *replies) intOK(res rueidis.RedisResult, what string) (int64, bool) {
	n, err := res.AsInt64()
	return n, !r.failed(err, what)
}

func (r *replies) float(res rueidis.RedisResult, what string) (float64, bool) {
	d, err := res.AsFloat64()
	return d, !r.failed(err, what)
}

func (r *replies) strMap(res rueidis.RedisResult, what string) map[string]string {
	m, err := res.AsStrMap()
	if r.failed(err, what) {
		return nil
	}
	return m
}

func (r *replies) zscores(res rueidis.RedisResult, what string) []rueidis.ZScore {
	z, err := res.AsZScores()
	if r.failed(err, what) {
		return nil
	}
	return z
}

func (r *replies) strSlice(res rueidis.RedisResult, what string) []string {
	s, err := res.AsStrSlice()
	if r.failed(err, what) {
		return nil
	}
	return s
}

// readerKeys are the timeout keys of one reader's read holds.
type readerKeys struct {
	field string   // the reader's hash field, "<client id>:<owner id>"
	holds int64    // its read hold count
	keys  []string // the timeout keys of holds 1..holds, as far as read
}

// holdKeys lists the timeout keys of the read holds of a read/write lock,
// keys.Suffix(name, "<owner>:rwlock_timeout:<k>") for k = 1..count, reader
// by reader in field order, at most maxHoldKeys in all. Every field but
// "mode" and the writer's ("...:write") is a reader's, the writer's own
// read holds included. Both Probe and Decode call it, so Decode knows
// which keys were read.
func holdKeys(f *Facts) []readerKeys {
	if _, ok := f.Fields["mode"]; !ok {
		return nil
	}
	var out []readerKeys
	budget := maxHoldKeys
	for _, field := range slices.Sorted(maps.Keys(f.Fields)) {
		if field == "mode" || strings.HasSuffix(field, ":write") {
			continue
		}
		n, err := strconv.ParseInt(f.Fields[field], 10, 64)
		if err != nil || n <= 0 {
			continue // Decode notes the bad count
		}
		rk := readerKeys{field: field, holds: n}
		for k := int64(1); k <= n && budget > 0; k++ {
			rk.keys = append(rk.keys, ReadTimeoutKey(f.Name, field, k))
			budget--
		}
		out = append(out, rk)
	}
	return out
}

// ReadTimeoutKey is the timeout key of hold k of reader owner:
// {name}:<owner>:rwlock_timeout:<k>.
func ReadTimeoutKey(name, owner string, k int64) string {
	return keys.Suffix(name, owner+":"+keys.ReadTimeoutSuffix+":"+strconv.FormatInt(k, 10))
}

// uniq returns s without repeated elements, in order of first appearance.
func uniq(s []string) []string {
	seen := make(map[string]bool, len(s))
	out := make([]string, 0, len(s))
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
