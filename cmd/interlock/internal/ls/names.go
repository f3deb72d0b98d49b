package ls

import (
	"strconv"
	"strings"

	"github.com/interlock-go/interlock/cmd/interlock/internal/inspect"
	"github.com/interlock-go/interlock/internal/keys"
)

// unwrapName inverts keys.Prefix and keys.Suffix: given what they put
// around a name ("{N}" for a name without braces, N itself for one with
// them), it returns N. braced reports the "{N}" form, which the name
// "{N}" itself would also give (see scan.resolveBraced); ok is false when
// no name gives s.
func unwrapName(s string) (name string, braced, ok bool) {
	if inner, found := strings.CutPrefix(s, "{"); found {
		if inner, found = strings.CutSuffix(inner, "}"); found && inner != "" && !strings.Contains(inner, "{") {
			return inner, true, true
		}
	}
	if strings.Contains(s, "{") {
		return s, false, true
	}
	return "", false, false
}

// unprefixName returns the name N of a key or channel prefix+":"+... that
// keys.Prefix(prefix, N) made.
func unprefixName(key, prefix string) (name string, braced, ok bool) {
	rest, found := strings.CutPrefix(key, prefix+":")
	if !found {
		return "", false, false
	}
	return unwrapName(rest)
}

// unsuffixName returns the name N of a key that keys.Suffix(N, suffix)
// made.
func unsuffixName(key, suffix string) (name string, braced, ok bool) {
	base, found := strings.CutSuffix(key, ":"+suffix)
	if !found {
		return "", false, false
	}
	return unwrapName(base)
}

// isUUID reports whether s is a UUID in its 36-character text form, as
// Redisson's and interlock's client ids are.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f', 'A' <= c && c <= 'F':
		default:
			return false
		}
	}
	return true
}

// isOwner reports whether s is an owner "<client id>:<owner id>" whose
// client id is a UUID.
func isOwner(s string) bool {
	client, _, err := inspect.ParseOwner(s)
	return err == nil && isUUID(client)
}

// cutOwner splits s into what comes before ":<client id>:<owner id>" and
// that owner, when s ends with one whose client id is a UUID.
func cutOwner(s string) (before, owner string, ok bool) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return "", "", false
	}
	j := strings.LastIndexByte(s[:i], ':')
	if j < 0 || !isOwner(s[j+1:]) {
		return "", "", false
	}
	return s[:j], s[j+1:], true
}

// readTimeoutName parses a read hold's timeout key, keys.Suffix(N,
// "<owner>:rwlock_timeout:<k>") (inspect.ReadTimeoutKey), into N, the owner and k.
func readTimeoutName(key string) (name, owner string, k int64, braced, ok bool) {
	i := strings.LastIndex(key, ":"+keys.ReadTimeoutSuffix+":")
	if i < 0 {
		return "", "", 0, false, false
	}
	k, err := strconv.ParseInt(key[i+len(keys.ReadTimeoutSuffix)+2:], 10, 64)
	if err != nil || k < 1 {
		return "", "", 0, false, false
	}
	base, owner, found := cutOwner(key[:i])
	if !found {
		return "", "", 0, false, false
	}
	name, braced, ok = unwrapName(base)
	return name, owner, k, braced, ok
}

// Channel families: what kind of object a channel's subscribers wait for.
const (
	chanLock      = iota // a lock's release channel, or a fair waiter's
	chanReadWrite        // a read/write lock's
	chanSemaphore        // either semaphore's
	chanLatch            // a count-down latch's
)

// channelName returns the name of the object whose channel ch is, and the
// family of the channel.
func channelName(ch string) (name string, family int, braced, ok bool) {
	if rest, found := strings.CutPrefix(ch, keys.LatchChannelPrefix+"{"); found {
		if name, found = strings.CutSuffix(rest, "}"); found && name != "" {
			return name, chanLatch, false, true
		}
		return "", 0, false, false
	}
	for _, c := range []struct {
		prefix string
		family int
	}{{keys.LockChannelPrefix, chanLock}, {keys.ReadWriteChannelPrefix, chanReadWrite}, {keys.SemaphoreChannelPrefix, chanSemaphore}} {
		rest, found := strings.CutPrefix(ch, c.prefix+":")
		if !found {
			continue
		}
		if c.family == chanLock {
			// A fair lock's waiter listens on the lock's channel + ":" + owner.
			if base, _, isWaiter := cutOwner(rest); isWaiter {
				if name, braced, ok = unwrapName(base); ok {
					return name, c.family, braced, true
				}
			}
		}
		name, braced, ok = unwrapName(rest)
		return name, c.family, braced, ok
	}
	return "", 0, false, false
}

// globMatch reports whether s matches the Redis glob pattern (as SCAN's
// MATCH does): * any bytes, ? one byte, [abc], [^abc] and [a-z] classes,
// and \ quoting the next byte.
func globMatch(pattern, s string) bool {
	p, i := 0, 0
	starP, starI := -1, 0
	for i < len(s) {
		if p < len(pattern) && pattern[p] == '*' {
			starP, starI = p, i
			p++
			continue
		}
		if p < len(pattern) {
			if next, ok := globOne(pattern, p, s[i]); ok {
				p, i = next, i+1
				continue
			}
		}
		if starP < 0 {
			return false
		}
		starI++
		p, i = starP+1, starI
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// globOne matches the pattern element at pattern[p] (not "*") against c
// and returns the index of the next element.
func globOne(pattern string, p int, c byte) (int, bool) {
	switch pattern[p] {
	case '?':
		return p + 1, true
	case '\\':
		if p+1 < len(pattern) {
			return p + 2, pattern[p+1] == c
		}
		return p + 1, c == '\\'
	case '[':
		return globClass(pattern, p+1, c)
	}
	return p + 1, pattern[p] == c
}

// globClass matches c against the class that starts at pattern[p] (after
// its "["), as Redis does: an unclosed class runs to the pattern's end.
func globClass(pattern string, p int, c byte) (int, bool) {
	not := p < len(pattern) && pattern[p] == '^'
	if not {
		p++
	}
	match := false
	for p < len(pattern) && pattern[p] != ']' {
		switch {
		case pattern[p] == '\\' && p+1 < len(pattern):
			p++
			match = match || pattern[p] == c
		case p+2 < len(pattern) && pattern[p+1] == '-' && pattern[p+2] != ']':
			lo, hi := pattern[p], pattern[p+2]
			if lo > hi {
				lo, hi = hi, lo
			}
			match = match || (lo <= c && c <= hi)
			p += 2
		default:
			match = match || pattern[p] == c
		}
		p++
	}
	if p < len(pattern) {
		p++ // the "]"
	}
	return p, match != not
}

// globLiteralPrefix returns the bytes every string that matches pattern
// starts with: its text before the first *, ? or [, unquoted.
func globLiteralPrefix(pattern string) string {
	var b strings.Builder
	for p := 0; p < len(pattern); p++ {
		switch c := pattern[p]; c {
		case '*', '?', '[':
			return b.String()
		case '\\':
			if p+1 < len(pattern) {
				p++
			}
			b.WriteByte(pattern[p])
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// globQuote quotes s for a glob pattern: it matches s alone.
func globQuote(s string) string {
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

// containsPattern returns a glob that every key and channel of an object
// whose name matches pattern matches too (each holds the name as it is):
// "*" + the literal prefix + "*", or "" when the prefix is empty (every
// key).
func containsPattern(pattern string) string {
	lit := globLiteralPrefix(pattern)
	if lit == "" {
		return ""
	}
	return "*" + globQuote(lit) + "*"
}

// rateStateName parses a rate limiter's state key, {N}:value or
// {N}:permits, or a client's, {N}:value:<client id> or
// {N}:permits:<client id> with a UUID for client id, into N and the
// client id ("" for the overall keys).
func rateStateName(key string) (name, client string, braced, ok bool) {
	base := key
	if i := strings.LastIndexByte(key, ':'); i >= 0 && isUUID(key[i+1:]) {
		base, client = key[:i], key[i+1:]
	}
	for _, suffix := range []string{keys.RateValueSuffix, keys.RatePermitsSuffix} {
		if name, braced, ok = unsuffixName(base, suffix); ok {
			return name, client, braced, true
		}
	}
	return "", "", false, false
}
