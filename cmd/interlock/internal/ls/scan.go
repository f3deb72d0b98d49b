package ls

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/inspect"
	"github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"
	"github.com/interlock-go/interlock/internal/keys"
)

// Bounds on what ls reads of one key while it looks for synchronizers.
const (
	// maxLockFields: a hash with more fields is taken for application
	// data and not read (a lock hash has one field per holder).
	maxLockFields = 1000
	// maxCounterLen: a longer string holds no int64.
	maxCounterLen = 20
	// permitSample: the members of a sorted set "{N}:timeout" checked to be
	// 16-byte permit ids.
	permitSample = 10
)

// candidate is a name the scan found a trace of: a key of that name
// shaped like a synchronizer, a key Redisson derives from that name, or a
// channel of that name with subscribers.
type candidate struct {
	name string
	// primary: the key named name itself looked like a lock hash or (with
	// --counters) a counter.
	primary bool
	// braced: found only through keys of the form "{name}...", which the
	// name "{name}" makes too (resolveBraced).
	braced bool
	// readKeys are the read hold timeout keys of name the scan saw.
	readKeys []readKey
	// subscribers is the number of connections subscribed to the name's
	// channels, over every node.
	subscribers int64
	// waitSem and waitLatch: the subscribers wait on a semaphore's or a
	// latch's channel, which tells what a counter is.
	waitSem, waitLatch bool
	// rateClients are the client ids of the per-client rate limiter keys
	// of name the scan saw ({name}:value:<id>, {name}:permits:<id>).
	rateClients []string
}

// readKey is one read hold timeout key, inspect.ReadTimeoutKey(name, owner, k).
type readKey struct {
	key   string
	owner string
	k     int64
}

// scan finds the synchronizers of one keyspace (Command).
type scan struct {
	rc       rueidis.Client
	pattern  string // PATTERN: a glob on synchronizer names
	match    string // SCAN's MATCH: containsPattern(pattern), "" for none
	count    int64  // SCAN's COUNT hint
	limit    int    // at most this many candidates; 0: no limit
	counters bool   // --counters: integer strings are candidates too
	progress *progressWriter

	cands     map[string]*candidate
	scanned   int64    // keys SCAN returned, over every node
	latches   set      // unlock latch keys seen (not listed)
	receipts  set      // receipt keys seen (not listed)
	nodes     []string // the nodes scanned
	truncated bool     // a candidate was left out because of limit
	notes     []string // what could not be read, for the whole listing
}

// set holds distinct keys: SCAN may return a key more than once while the
// server's table grows or shrinks.
type set map[string]struct{}

// add puts k in the set, making it on first use.
func (s *set) add(k string) {
	if *s == nil {
		*s = set{}
	}
	(*s)[k] = struct{}{}
}

// full reports whether the scan has as many candidates as it may list.
func (s *scan) full() bool { return s.limit > 0 && len(s.cands) >= s.limit }

// add returns the candidate called name, making it if need be, or nil
// when name does not match PATTERN or the limit is reached.
func (s *scan) add(name string, braced bool) *candidate {
	if !globMatch(s.pattern, name) {
		return nil
	}
	c, ok := s.cands[name]
	if !ok {
		if s.full() {
			s.truncated = true
			return nil
		}
		c = &candidate{name: name, braced: braced}
		s.cands[name] = c
	}
	c.braced = c.braced && braced
	return c
}

// scanNodes returns the nodes whose keys make up the keyspace: the one
// server of a standalone or sentinel client, or every master of a
// cluster (a node that does not answer ROLE is taken for one; keys found
// twice are listed once).
func scanNodes(ctx context.Context, rc rueidis.Client) (map[string]rueidis.Client, error) {
	nodes := rc.Nodes()
	if rc.Mode() != rueidis.ClientModeCluster {
		return nodes, nil
	}
	masters := map[string]rueidis.Client{}
	for addr, n := range nodes {
		role, err := n.Do(ctx, n.B().Role().Build()).ToArray()
		if err != nil && !redisconn.IsErrorReply(err) {
			return nil, fmt.Errorf("ROLE on %s: %w", addr, err)
		}
		if err == nil && len(role) > 0 {
			if r, _ := role[0].ToString(); r != "master" {
				continue
			}
		}
		masters[addr] = n
	}
	return masters, nil
}

// scanAll scans every node of nodes, in address order, until the limit.
func (s *scan) scanAll(ctx context.Context, nodes map[string]rueidis.Client) error {
	for _, addr := range slices.Sorted(maps.Keys(nodes)) {
		if s.truncated {
			break
		}
		s.nodes = append(s.nodes, addr)
		if err := s.scanNode(ctx, addr, nodes[addr]); err != nil {
			return err
		}
	}
	return nil
}

// scanNode SCANs the keys of one node, a COUNT hint at a time, and
// classifies each batch as it comes.
func (s *scan) scanNode(ctx context.Context, addr string, n rueidis.Client) error {
	var cursor uint64
	for {
		var cmd rueidis.Completed
		if s.match != "" {
			cmd = n.B().Scan().Cursor(cursor).Match(s.match).Count(s.count).Build()
		} else {
			cmd = n.B().Scan().Cursor(cursor).Count(s.count).Build()
		}
		e, err := n.Do(ctx, cmd).AsScanEntry()
		if err != nil {
			return fmt.Errorf("SCAN on %s: %w", addr, err)
		}
		s.scanned += int64(len(e.Elements))
		if err := s.classify(ctx, n, e.Elements); err != nil {
			return fmt.Errorf("%s: %w", addr, err)
		}
		s.progress.tick(s.scanned, len(s.cands))
		if cursor = e.Cursor; cursor == 0 || s.truncated {
			return nil
		}
	}
}

// classify looks at one batch of keys of node n: keys Redisson derives
// from a name are told by their names; the others by their type and
// shape, read in at most three pipelined round trips.
func (s *scan) classify(ctx context.Context, n rueidis.Client, batch []string) error {
	var typed []string
	for _, k := range batch {
		switch {
		case strings.HasPrefix(k, keys.UnlockLatchPrefix+":"):
			s.latches.add(k)
			continue
		case strings.HasPrefix(k, keys.ReceiptPrefix+":"):
			s.receipts.add(k)
			continue
		}
		if name, braced, ok := s.derivedName(k); ok {
			s.add(name, braced)
			continue
		}
		if name, client, braced, ok := rateStateName(k); ok {
			if c := s.add(name, braced); c != nil && client != "" {
				c.rateClients = append(c.rateClients, client)
			}
			continue
		}
		if name, owner, hold, braced, ok := readTimeoutName(k); ok {
			if c := s.add(name, braced); c != nil {
				c.readKeys = append(c.readKeys, readKey{key: k, owner: owner, k: hold})
			}
			continue
		}
		if globMatch(s.pattern, k) || s.permitsName(k) != "" {
			typed = append(typed, k)
		}
	}
	if len(typed) == 0 {
		return nil
	}

	// Round 1: the type of every other key.
	b := n.B()
	cmds := make(rueidis.Commands, len(typed))
	for i, k := range typed {
		cmds[i] = b.Type().Key(k).Build()
	}
	res, err := pipe(ctx, n, cmds)
	if err != nil {
		return err
	}
	var hashes, counters, zsets []string
	for i, k := range typed {
		t, err := res[i].ToString()
		switch {
		case err != nil:
		case t == "hash" && globMatch(s.pattern, k):
			hashes = append(hashes, k)
		case t == "string" && s.counters && globMatch(s.pattern, k):
			counters = append(counters, k)
		case t == "zset" && s.permitsName(k) != "":
			zsets = append(zsets, k)
		}
	}

	// Round 2: how big the hashes are, the start of the strings, a few
	// members of the sorted sets.
	cmds = cmds[:0]
	for _, k := range hashes {
		cmds = append(cmds, b.Hlen().Key(k).Build())
	}
	for _, k := range counters {
		cmds = append(cmds, b.Strlen().Key(k).Build(), b.Getrange().Key(k).Start(0).End(maxCounterLen-1).Build())
	}
	for _, k := range zsets {
		cmds = append(cmds, b.Zrange().Key(k).Min("0").Max(strconv.Itoa(permitSample-1)).Build())
	}
	if len(cmds) == 0 {
		return nil
	}
	if res, err = pipe(ctx, n, cmds); err != nil {
		return err
	}
	var small []string
	for _, k := range hashes {
		if size, err := res[0].AsInt64(); err == nil && size > 0 && size <= maxLockFields {
			small = append(small, k)
		}
		res = res[1:]
	}
	for _, k := range counters {
		size, err := res[0].AsInt64()
		head, err2 := res[1].ToString()
		if _, isInt := inspect.ParseCounter(head); err == nil && err2 == nil && size <= maxCounterLen && isInt {
			if c := s.add(k, false); c != nil {
				c.primary = true
			}
		}
		res = res[2:]
	}
	for _, k := range zsets {
		if members, err := res[0].AsStrSlice(); err == nil && permitShaped(members) {
			name, braced, _ := unsuffixName(k, keys.PermitsSuffix)
			s.add(name, braced)
		}
		res = res[1:]
	}

	// Round 3: the fields of the small hashes.
	if len(small) == 0 {
		return nil
	}
	cmds = cmds[:0]
	for _, k := range small {
		cmds = append(cmds, b.Hgetall().Key(k).Build())
	}
	if res, err = pipe(ctx, n, cmds); err != nil {
		return err
	}
	for i, k := range small {
		if fields, err := res[i].AsStrMap(); err == nil && (lockShaped(fields) || inspect.IsRateConfig(fields)) {
			if c := s.add(k, false); c != nil {
				c.primary = true
			}
		}
	}
	return nil
}

// derivedName returns the name of a fair lock's queue or deadlines, or of
// a fenced lock's token counter.
func (s *scan) derivedName(key string) (name string, braced, ok bool) {
	for _, prefix := range []string{keys.FairQueuePrefix, keys.FairTimeoutPrefix, keys.FenceTokenPrefix} {
		if name, braced, ok = unprefixName(key, prefix); ok {
			return name, braced, true
		}
	}
	return "", false, false
}

// permitsName returns the name of the expirable semaphore whose sorted
// set of acquired permits key would be, when that name matches PATTERN;
// else "".
func (s *scan) permitsName(key string) string {
	name, _, ok := unsuffixName(key, keys.PermitsSuffix)
	if !ok || !globMatch(s.pattern, name) {
		return ""
	}
	return name
}

// pipe sends cmds to n. A failure to talk to Redis fails the whole
// pipeline; an error reply (a key that moved or changed type meanwhile)
// is left in its result, for the caller to skip.
func pipe(ctx context.Context, n rueidis.Client, cmds rueidis.Commands) ([]rueidis.RedisResult, error) {
	res := n.DoMulti(ctx, cmds...)
	for _, r := range res {
		if err := r.Error(); err != nil && !rueidis.IsRedisNil(err) && !redisconn.IsErrorReply(err) {
			return nil, err
		}
	}
	return res, nil
}

// lockShaped reports whether a hash looks like a Redisson lock: every
// field is an owner "<client id>:<owner id>" (with ":write" for a
// read/write lock's writer) whose client id is a UUID, holding an
// integer, except a read/write lock's "mode", "read" or "write".
func lockShaped(fields map[string]string) bool {
	mode, rw := fields["mode"]
	if rw && mode != "read" && mode != "write" {
		return false
	}
	owners := 0
	for field, value := range fields {
		if rw && field == "mode" {
			continue
		}
		if rw {
			field = strings.TrimSuffix(field, ":write")
		}
		if _, isInt := inspect.ParseCounter(value); !isInt || !isOwner(field) {
			return false
		}
		owners++
	}
	return owners > 0
}

// permitShaped reports whether sorted-set members are permit ids: 16 raw
// bytes each.
func permitShaped(members []string) bool {
	for _, m := range members {
		if len(m) != 16 {
			return false
		}
	}
	return len(members) > 0
}

// countSubscribers reads the channels of Redisson objects with
// subscribers on every node (replicas included: classic subscribers may
// be connected anywhere), classic and sharded, and adds their counts to
// the candidates.
func (s *scan) countSubscribers(ctx context.Context) error {
	pattern := "redisson*"
	if m := containsPattern(s.pattern); m != "" {
		pattern = "redisson" + m
	}
	counts := map[string]int64{}
	nodes := s.rc.Nodes()
	for _, addr := range slices.Sorted(maps.Keys(nodes)) {
		n := nodes[addr]
		for _, sharded := range []bool{false, true} {
			err := nodeSubscribers(ctx, n, pattern, sharded, counts)
			switch {
			case err == nil:
			case redisconn.IsErrorReply(err) && sharded:
				// Before Redis 7 there is no sharded pub/sub.
			case redisconn.IsErrorReply(err):
				s.notes = append(s.notes, fmt.Sprintf("the subscribers on %s could not be read: %v", addr, err))
			default:
				return fmt.Errorf("PUBSUB on %s: %w", addr, err)
			}
		}
	}
	for _, ch := range slices.Sorted(maps.Keys(counts)) {
		name, family, braced, ok := channelName(ch)
		if !ok || counts[ch] == 0 {
			continue
		}
		c := s.add(name, braced)
		if c == nil {
			continue
		}
		c.subscribers += counts[ch]
		c.waitSem = c.waitSem || family == chanSemaphore
		c.waitLatch = c.waitLatch || family == chanLatch
	}
	return nil
}

// nodeSubscribers adds the subscriber counts of node n's channels that
// match pattern to counts.
func nodeSubscribers(ctx context.Context, n rueidis.Client, pattern string, sharded bool, counts map[string]int64) error {
	b := n.B()
	list := b.PubsubChannels().Pattern(pattern).Build()
	if sharded {
		list = b.PubsubShardchannels().Pattern(pattern).Build()
	}
	chans, err := n.Do(ctx, list).AsStrSlice()
	if err != nil || len(chans) == 0 {
		return err
	}
	// One channel per command: sharded channels of several slots in one
	// command would be refused.
	cmds := make(rueidis.Commands, len(chans))
	for i, ch := range chans {
		cmds[i] = b.PubsubNumsub().Channel(ch).Build()
		if sharded {
			cmds[i] = b.PubsubShardnumsub().Channel(ch).Build()
		}
	}
	for _, r := range n.DoMulti(ctx, cmds...) {
		m, err := r.AsIntMap()
		if err != nil {
			return err
		}
		for ch, k := range m {
			counts[ch] += k
		}
	}
	return nil
}

// resolveBraced settles the one ambiguity in Redisson's key names: the
// derived keys of the names "x" and "{x}" are the same. A candidate "x"
// found only through such keys belongs to "{x}" when the key "{x}" is a
// synchronizer and the key "x" is not.
func (s *scan) resolveBraced() {
	for name, c := range s.cands {
		if !c.braced || c.primary {
			continue
		}
		other, ok := s.cands["{"+name+"}"]
		if !ok || !other.primary {
			continue
		}
		other.readKeys = append(other.readKeys, c.readKeys...)
		other.subscribers += c.subscribers
		other.waitSem = other.waitSem || c.waitSem
		other.waitLatch = other.waitLatch || c.waitLatch
		other.rateClients = append(other.rateClients, c.rateClients...)
		delete(s.cands, name)
	}
}

// progressWriter writes progress lines on stderr while a scan is long: one
// every interval (after every SCAN reply for 0; never when negative).
type progressWriter struct {
	w       io.Writer
	every   time.Duration
	last    time.Time
	printed bool
}

// tick reports the keys scanned and synchronizers found so far, when the
// interval since the last line (or the start) has passed.
func (p *progressWriter) tick(keys int64, found int) {
	if p.every < 0 || time.Since(p.last) < p.every {
		return
	}
	p.last, p.printed = time.Now(), true
	fmt.Fprintf(p.w, "interlock ls: scanned %d keys, %s\n", keys, cli.Plural(found, "synchronizer"))
}

// done ends the progress lines with the totals, if any line was written.
func (p *progressWriter) done(keys int64, nodes, found int) {
	if !p.printed {
		return
	}
	fmt.Fprintf(p.w, "interlock ls: scanned %d keys on %s, found %s\n", keys, cli.Plural(nodes, "node"), cli.Plural(found, "synchronizer"))
}
