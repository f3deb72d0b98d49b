package inspect

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/cmd/interlock/internal/kinds"
	"github.com/interlock-go/interlock/internal/keys"
)

// Bounds on what ProbeShape reads: enough to tell a Redisson object from
// other data, however large that data is.
const (
	shapeFields = 100 // hash fields sampled
	shapeBytes  = 40  // bytes of a string read; a counter has at most 20
)

// Misfit is the refusal of a name whose keys hold what the kind asked for
// cannot work on: another type of data, a hash that is no lock, a lock of
// another kind, a counter that is no integer.
type Misfit struct {
	// Name is the name checked: the key (with --name-prefix's prefix).
	Name string
	// Kind is the kind asked for (package kinds).
	Kind string
	// Holds says what is there, as in `it holds a string ("hello")`.
	Holds string
}

// Error says what the name is not, and what it holds.
func (m *Misfit) Error() string {
	return fmt.Sprintf("%q is no %s: %s", m.Name, kindNoun(m.Kind), m.Holds)
}

// kindNoun names a kind of --kind in a sentence: "reentrant lock",
// "semaphore", "read/write lock".
func kindNoun(kind string) string {
	switch kind {
	case kinds.Read, kinds.Write:
		return "read/write lock"
	case kinds.Semaphore:
		return "semaphore"
	case kinds.Expirable:
		return "expirable semaphore"
	case kinds.Latch:
		return "latch"
	case kinds.RateLimit:
		return "rate limiter"
	}
	return kind + " lock"
}

// Check reads what Redis holds for name (ProbeShape) and tells whether
// kind (a value of --kind, or kinds.Latch) can work on it: a *Misfit when
// it cannot, the error of the read when Redis fails, else nil.
func Check(ctx context.Context, rc rueidis.Client, name, kind string) error {
	f, err := ProbeShape(ctx, rc, name)
	if err != nil {
		return err
	}
	return Fits(f, kind)
}

// ProbeShape reads, in one round trip and a bounded amount, what Fits
// needs to know about name: the types of its keys, a sample of a hash's
// fields and the start of a string. Unlike Probe it reads no more of a
// large key than that.
func ProbeShape(ctx context.Context, rc rueidis.Client, name string) (*Facts, error) {
	queueKey := keys.Prefix(keys.FairQueuePrefix, name)
	timesKey := keys.Prefix(keys.FairTimeoutPrefix, name)
	tokenKey := keys.Prefix(keys.FenceTokenPrefix, name)
	permitsKey := keys.Suffix(name, keys.PermitsSuffix)
	b := rc.B()
	res := rc.DoMulti(ctx,
		b.Type().Key(name).Build(),
		b.Hscan().Key(name).Cursor(0).Count(shapeFields).Build(),
		b.Hget().Key(name).Field("mode").Build(),
		b.Getrange().Key(name).Start(0).End(shapeBytes-1).Build(),
		b.Type().Key(queueKey).Build(),
		b.Type().Key(timesKey).Build(),
		b.Type().Key(tokenKey).Build(),
		b.Getrange().Key(tokenKey).Start(0).End(shapeBytes-1).Build(),
		b.Type().Key(permitsKey).Build(),
		b.Type().Key(rateValueKey(name, "")).Build(),
		b.Getrange().Key(rateValueKey(name, "")).Start(0).End(shapeBytes-1).Build(),
		b.Type().Key(ratePermitsKey(name, "")).Build(),
	)
	f := &Facts{Name: name}
	r := replies{f: f}
	f.KeyType = r.str(res[0], "TYPE "+name)
	f.queueType = r.str(res[4], "TYPE "+queueKey)
	f.timesType = r.str(res[5], "TYPE "+timesKey)
	f.tokenType = r.str(res[6], "TYPE "+tokenKey)
	f.PermitsType = r.str(res[8], "TYPE "+permitsKey)
	f.rate.valueType = r.str(res[9], "TYPE "+rateValueKey(name, ""))
	if f.rate.valueType == "string" {
		f.rate.value = r.str(res[10], "GETRANGE "+rateValueKey(name, ""))
	}
	f.rate.permitsType = r.str(res[11], "TYPE "+ratePermitsKey(name, ""))
	switch f.KeyType {
	case "hash":
		f.Fields = map[string]string{}
		if e, err := res[1].AsScanEntry(); !r.failed(err, "HSCAN "+name) {
			for i := 0; i+1 < len(e.Elements); i += 2 {
				f.Fields[e.Elements[i]] = e.Elements[i+1]
			}
		}
		// The sample may miss the one field that makes a read/write lock.
		if mode, err := res[2].ToString(); !r.failed(err, "HGET "+name+" mode") {
			f.Fields["mode"] = mode
		}
	case "string":
		f.value = r.str(res[3], "GETRANGE "+name)
	}
	if f.tokenType == "string" {
		f.token = r.str(res[7], "GETRANGE "+tokenKey)
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(f.replyErrors) > 0 {
		// A key that changed type between TYPE and its read: say so rather
		// than judge half of it.
		return nil, errors.New("the keys of " + strconv.Quote(name) + " changed while read: " + f.replyErrors[0])
	}
	return f, nil
}

// Fits tells whether kind (a value of --kind, or kinds.Latch) can work on
// what the facts show: nil when it can (nothing there counts), else a
// *Misfit saying what is there. A lock kind wants a lock hash of its own
// kind, whose fields are all "<client id>:<owner id>" with a positive hold
// count, and a fair lock's queue and a fenced lock's token of their types;
// a semaphore or latch wants a string holding an integer; a rate limiter
// its config hash (whose fields parse) and a count and a sorted set beside
// it.
func Fits(f *Facts, kind string) error {
	var holds string
	switch {
	case kinds.IsLock(kind):
		holds = lockMisfit(f, kind)
	case kinds.IsSemaphore(kind), kind == kinds.Latch:
		holds = counterMisfit(f, kind)
	case kind == kinds.RateLimit:
		holds = rateMisfit(f)
	}
	if holds == "" {
		return nil
	}
	return &Misfit{Name: f.Name, Kind: kind, Holds: holds}
}

// lockMisfit says what makes the facts no lock of kind, or "".
func lockMisfit(f *Facts, kind string) string {
	readWrite := kind == kinds.Read || kind == kinds.Write
	switch f.KeyType {
	case "none", "":
	case "hash":
		if IsRateConfig(f.Fields) {
			return holdsKey(f)
		}
		if s := foreignHash(f); s != "" {
			return s
		}
		mode, hasMode := f.Fields["mode"]
		switch {
		case hasMode && mode != "read" && mode != "write":
			return fmt.Sprintf("it holds a hash, no lock (mode %q is neither \"read\" nor \"write\")", mode)
		case hasMode && !readWrite:
			return fmt.Sprintf("it holds a read/write lock (mode %q): use --kind read or --kind write", mode)
		case !hasMode && readWrite:
			return "it holds a reentrant, fair or fenced lock (a hash of holders with no \"mode\")"
		}
	default:
		return holdsKey(f)
	}
	switch kind {
	case kinds.Fair:
		if t := f.queueType; t != "" && t != "none" && t != "list" {
			return fmt.Sprintf("%s holds %s, not a fair lock's queue (a list)", keys.Prefix(keys.FairQueuePrefix, f.Name), typeNoun(t))
		}
		if t := f.timesType; t != "" && t != "none" && t != "zset" {
			return fmt.Sprintf("%s holds %s, not a fair lock's deadlines (a sorted set)", keys.Prefix(keys.FairTimeoutPrefix, f.Name), typeNoun(t))
		}
	case kinds.Fenced:
		tokenKey := keys.Prefix(keys.FenceTokenPrefix, f.Name)
		switch n, isInt := ParseCounter(f.token); {
		case f.tokenType == "" || f.tokenType == "none":
		case f.tokenType != "string":
			return fmt.Sprintf("%s holds %s, not a fencing token", tokenKey, typeNoun(f.tokenType))
		case !isInt || n < 0:
			return fmt.Sprintf("%s holds %s, not a fencing token (an integer)", tokenKey, quoteShort(f.token))
		}
	}
	return ""
}

// counterMisfit says what makes the facts no semaphore or latch of kind,
// or "".
func counterMisfit(f *Facts, kind string) string {
	switch _, isInt := ParseCounter(f.value); {
	case f.KeyType == "none" || f.KeyType == "":
	case f.KeyType != "string" || !isInt:
		return holdsKey(f)
	}
	permitsKey := keys.Suffix(f.Name, keys.PermitsSuffix)
	switch t := f.PermitsType; {
	case t == "" || t == "none":
	case kind == kinds.Latch && t == "zset":
		return fmt.Sprintf("it is an expirable semaphore: %s holds its acquired permits", permitsKey)
	case kind == kinds.Expirable && t != "zset":
		return fmt.Sprintf("%s holds %s, not an expirable semaphore's acquired permits (a sorted set)", permitsKey, typeNoun(t))
	}
	return ""
}

// holdsKey says what the name's key holds, when that is no Redisson
// synchronizer or not the one asked for.
func holdsKey(f *Facts) string {
	switch f.KeyType {
	case "hash":
		if IsRateConfig(f.Fields) {
			return "it holds a rate limiter's config (rate " + f.Fields["rate"] + " per " + f.Fields["interval"] + "ms)"
		}
		if s := foreignHash(f); s != "" {
			return s
		}
		if HasMode(f) {
			return fmt.Sprintf("it holds a read/write lock (mode %q)", f.Fields["mode"])
		}
		return "it holds a lock (a hash of holders)"
	case "string":
		if n, isInt := ParseCounter(f.value); isInt {
			return fmt.Sprintf("it holds the integer %d, the count of a semaphore or a latch", n)
		}
		return fmt.Sprintf("it holds a string, %s, not an integer", quoteShort(f.value))
	}
	return "it holds " + typeNoun(f.KeyType)
}

// foreignHash says why the name's hash is no lock's, or "" when its
// fields (as far as read) are all holders.
func foreignHash(f *Facts) string {
	if _, notes := decodeHolders(f.Fields, HasMode(f)); len(notes) > 0 {
		return "it holds a hash, no lock (" + notes[0] + ")"
	}
	return ""
}

// typeNoun names a Redis TYPE in a sentence: "a list", "a sorted set".
func typeNoun(t string) string {
	switch t {
	case "zset":
		return "a sorted set"
	case "string", "list", "set", "hash", "stream":
		return "a " + t
	}
	return "a key of type " + t
}
