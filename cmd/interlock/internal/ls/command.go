// Package ls is "interlock ls": it walks the keyspace with SCAN, on every
// master of a cluster, finds the synchronizers whose names match a
// pattern, decodes each as inspect does and flags what looks wrong.
package ls

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/cmd/interlock/internal/inspect"
	"github.com/interlock-go/interlock/cmd/interlock/internal/kinds"
	"github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"
)

// Defaults of ls's flags.
const (
	defaultLimit    = 1000
	defaultCount    = 1000
	defaultProgress = time.Second
	// probers is how many synchronizers ls reads at once.
	probers = 8
)

// Flags of ls's entries: what looks wrong.
const (
	flagZombie       = "zombie"               // a lock, or a read hold, with no TTL
	flagStaleWaiters = "stale-waiters"        // fair waiters whose deadline passed
	flagStaleReaders = "stale-readers"        // readers whose read holds' keys are all gone
	flagOrphanReads  = "orphan-read-timeouts" // read hold keys of no read hold
	flagLeaked       = "leaked-permits"       // expired permits not given back yet
)

// entry is one synchronizer in ls's listing: inspect's report of its
// name, and what ls adds.
type entry struct {
	inspect.Report
	// Alike are the other kinds Redis stores just like this one, which
	// nothing in Redis tells apart from it.
	Alike []string `json:"alike,omitempty"`
	// Flags name what looks wrong; the notes explain each.
	Flags []string `json:"flags,omitempty"`
	// OrphanReadTimeouts are read hold timeout keys of the name that
	// belong to no read hold of its hash.
	OrphanReadTimeouts []orphanKey `json:"orphan_read_timeouts,omitempty"`
}

// orphanKey is an orphan read hold timeout key and its TTL in
// milliseconds (-1: no expiry).
type orphanKey struct {
	Key   string `json:"key"`
	TTLms int64  `json:"ttl_ms"`
}

// listing is ls's whole answer, the JSON object of --json.
type listing struct {
	Synchronizers []entry `json:"synchronizers"`
	// ScannedKeys is the number of keys SCAN returned, over every node.
	ScannedKeys int64 `json:"scanned_keys"`
	// Match is SCAN's MATCH pattern, derived from PATTERN ("" for none):
	// ScannedKeys counts the keys that match it.
	Match string `json:"match,omitempty"`
	// Nodes are the nodes scanned: the server, or a cluster's masters.
	Nodes []string `json:"nodes"`
	// Truncated: --limit was reached; more synchronizers may exist.
	Truncated bool `json:"truncated"`
	// UnlockLatches and Receipts count the short-lived keys of unlocks
	// and of interlock's semaphore and latch calls, which are no
	// synchronizers and are not listed.
	UnlockLatches int64 `json:"unlock_latches"`
	Receipts      int64 `json:"receipts"`
	// Counters reports whether string keys holding an integer were
	// listed (--counters).
	Counters bool     `json:"counters"`
	Notes    []string `json:"notes,omitempty"`
}

// progressFlag is ls's --progress: a duration, or "off".
type progressFlag struct{ d time.Duration }

// String returns the interval, or "off".
func (f *progressFlag) String() string {
	if f == nil {
		return defaultProgress.String()
	}
	if f.d < 0 {
		return "off"
	}
	return f.d.String()
}

// Set parses a non-negative duration or "off".
func (f *progressFlag) Set(s string) error {
	if s == "off" {
		f.d = -1
		return nil
	}
	var d cli.DurationFlag
	if err := d.Set(s); err != nil {
		return fmt.Errorf("%w, or off", err)
	}
	f.d = d.D
	return nil
}

// Command is "interlock ls": it lists the synchronizers in Redis.
var Command = cli.Command{Name: "ls", Usage: usage, Run: run}

// run is Command's Run.
func run(ctx context.Context, io cli.Stdio, args []string) error {
	fs := cli.NewFlagSet("ls", usage)
	redis := redisconn.AddFlag(fs.FlagSet, io.Getenv)
	asJSON := fs.Bool("json", false, "print JSON")
	limit := fs.Int("limit", defaultLimit, "list at most N synchronizers; 0: no limit")
	count := fs.Int64("count", defaultCount, "SCAN's COUNT hint")
	counters := fs.Bool("counters", false, "list string keys holding an integer")
	progress := &progressFlag{d: defaultProgress}
	fs.Var(progress, "progress", "interval of progress lines on stderr, or off")
	pos, err := fs.ParseArgs(io, args)
	if err != nil {
		return err
	}
	pattern := "*"
	switch {
	case len(pos) > 1:
		return cli.Usagef("ls", "at most one PATTERN")
	case len(pos) == 1:
		pattern = pos[0]
	}
	if *limit < 0 {
		return cli.Usagef("ls", "--limit must not be negative")
	}
	if *count < 1 {
		return cli.Usagef("ls", "--count must be at least 1")
	}
	c, err := redisconn.Connect(redis.URLs)
	if err != nil {
		return err
	}
	defer c.Close()
	s := &scan{
		rc: c.Redis, pattern: pattern, match: containsPattern(pattern), count: *count,
		limit: *limit, counters: *counters, cands: map[string]*candidate{},
		progress: &progressWriter{w: io.Err, every: progress.d, last: time.Now()},
	}
	listing, err := s.run(ctx)
	if err != nil {
		return exit.Failed("ls", err)
	}
	if *asJSON {
		return exit.WithCode(exit.Failure, writeJSON(io.Out, listing))
	}
	return exit.WithCode(exit.Failure, writeTable(io.Out, listing))
}

// run scans, reads every candidate and returns the listing.
func (s *scan) run(ctx context.Context) (*listing, error) {
	nodes, err := scanNodes(ctx, s.rc)
	if err != nil {
		return nil, err
	}
	if err := s.scanAll(ctx, nodes); err != nil {
		return nil, err
	}
	if err := s.countSubscribers(ctx); err != nil {
		return nil, err
	}
	s.resolveBraced()
	s.progress.done(s.scanned, len(s.nodes), len(s.cands))

	names := slices.Sorted(maps.Keys(s.cands))
	entries := make([]*entry, len(names))
	errs := make([]error, len(names))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(probers, len(names)) {
		wg.Go(func() {
			for i := range next {
				entries[i], errs[i] = s.entry(ctx, s.cands[names[i]])
			}
		})
	}
	for i := range names {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err // the first: the others are likely the same failure
		}
	}
	l := &listing{
		Synchronizers: []entry{}, ScannedKeys: s.scanned, Match: s.match, Nodes: s.nodes, Truncated: s.truncated,
		UnlockLatches: int64(len(s.latches)), Receipts: int64(len(s.receipts)), Counters: s.counters, Notes: s.notes,
	}
	for _, e := range entries {
		if e != nil {
			l.Synchronizers = append(l.Synchronizers, *e)
		}
	}
	return l, nil
}

// entry reads and decodes one candidate as inspect does, and adds ls's
// flags; nil when nothing of a synchronizer is left under its name.
func (s *scan) entry(ctx context.Context, c *candidate) (*entry, error) {
	// The clients of a PER_CLIENT rate limiter are those whose keys the
	// scan saw, unless it stopped at --limit: then inspect's SCAN finds
	// them.
	var clients []string
	if !s.truncated {
		clients = append([]string{}, c.rateClients...)
	}
	f, err := inspect.ProbeClients(ctx, s.rc, c.name, clients)
	if err != nil {
		return nil, fmt.Errorf("reading %q: %w", c.name, err)
	}
	// What its channel says a counter is, unless Redis says better.
	hint := ""
	switch k := inspect.DetectKind(f); {
	case k != kinds.None && k != kinds.Unknown, f.PermitsType == "zset":
	case c.waitSem && !c.waitLatch:
		hint = kinds.Semaphore
	case c.waitLatch && !c.waitSem:
		hint = kinds.Latch
	}
	e := &entry{Report: inspect.Decode(f, hint)}
	e.Subscribers = c.subscribers // over every channel of the name, a fair waiter's too
	if e.OrphanReadTimeouts, err = s.orphans(ctx, f, c.readKeys); err != nil {
		return nil, fmt.Errorf("reading %q: %w", c.name, err)
	}
	switch {
	case len(e.OrphanReadTimeouts) > 0 && e.Kind == kinds.None:
		e.Kind = kinds.ReadWrite
	case e.Kind == kinds.None && hint == "", e.Kind == kinds.Unknown && len(e.OrphanReadTimeouts) == 0:
		return nil, nil // gone meanwhile, or no synchronizer after all
	case e.Kind == kinds.Counter && !s.counters && hint == "":
		return nil, nil
	}
	e.Alike = alikeKinds[e.Kind]
	e.flag()
	return e, nil
}

// alikeKinds lists, for a kind ls shows, the other kinds whose data in
// Redis is the same; alikeNotes says so in words, below the table.
var (
	alikeKinds = map[string][]string{
		kinds.Reentrant: {kinds.Spin, "non-reentrant", kinds.Fair, "non-reentrant-fair"},
		kinds.Fair:      {"non-reentrant-fair"},
		kinds.Semaphore: {kinds.Expirable},
		kinds.Counter:   {kinds.Semaphore, kinds.Expirable, kinds.Latch},
	}
	alikeNotes = map[string]string{
		kinds.Reentrant: "an RLock, or a spin lock, a non-reentrant lock, or a fair lock of either kind that nobody waits for",
		kinds.Fair:      "a fair lock, or a non-reentrant fair lock",
		kinds.Semaphore: "a semaphore, or an expirable semaphore with no permit acquired",
		kinds.Counter:   "a semaphore of either kind, or a latch ('interlock inspect --kind' reads it as one)",
	}
)

// orphans returns the read hold timeout keys among seen that belong to no
// read hold of the name's hash (probed in f) and still exist.
func (s *scan) orphans(ctx context.Context, f *inspect.Facts, seen []readKey) ([]orphanKey, error) {
	var suspects []readKey
	for _, rk := range seen {
		holds, isInt := inspect.ParseCounter(f.Fields[rk.owner])
		if !inspect.HasMode(f) || !isInt || holds < rk.k {
			suspects = append(suspects, rk)
		}
	}
	if len(suspects) == 0 {
		return nil, nil
	}
	cmds := make(rueidis.Commands, len(suspects))
	for i, rk := range suspects {
		cmds[i] = s.rc.B().Pttl().Key(rk.key).Build()
	}
	res, err := pipe(ctx, s.rc, cmds)
	if err != nil {
		return nil, err
	}
	var out []orphanKey
	for i, rk := range suspects {
		if ttl, err := res[i].AsInt64(); err == nil && ttl != -2 {
			out = append(out, orphanKey{Key: rk.key, TTLms: ttl})
		}
	}
	return out, nil
}

// isLockKind reports whether kind is one of the locks ls lists.
func isLockKind(kind string) bool {
	switch kind {
	case kinds.Reentrant, kinds.Fair, kinds.Fenced, kinds.ReadWrite:
		return true
	}
	return false
}

// flag sets the entry's flags and explains each in a note.
func (e *entry) flag() {
	add := func(flag, note string) {
		if !slices.Contains(e.Flags, flag) {
			e.Flags = append(e.Flags, flag)
		}
		if note != "" {
			e.Notes = append(e.Notes, note)
		}
	}
	if isLockKind(e.Kind) && e.Locked && e.TTLms == -1 {
		add(flagZombie, "ZOMBIE: the lock has no TTL, so it never expires and no waiter gets it until it is unlocked "+
			"(a Redisson or interlock holder always sets one; 'interlock unlock --force' frees it once its holder is known to be dead)")
	}
	for _, h := range e.Holders {
		if slices.Contains(h.ReadHoldTTLms, -1) {
			add(flagZombie, fmt.Sprintf("ZOMBIE: a read hold of %s has no TTL and never expires", h.Field))
		}
		if h.Stale {
			add(flagStaleReaders, "") // inspect.Decode's note explains it
		}
	}
	stale := 0
	for _, w := range e.Queue {
		if w.Stale {
			stale++
		}
	}
	if stale > 0 {
		add(flagStaleWaiters, fmt.Sprintf("fair waiters past their deadline: %d; taken for dead, each is dropped "+
			"once it is at the head of the queue (by the next lock or unlock call)", stale))
	}
	if n := len(e.OrphanReadTimeouts); n > 0 {
		why := "the hash counts no such hold of its owner"
		switch {
		case !e.Locked:
			why = "the lock's hash is gone"
		case e.Kind != kinds.ReadWrite:
			why = "the hash is no read/write lock"
		}
		add(flagOrphanReads, fmt.Sprintf("read hold timeout keys of no read hold: %s (%d in all); %s. Left by a lock "+
			"deleted or expired under its readers, each goes when its TTL ends (one with no TTL stays until deleted)",
			e.OrphanReadTimeouts[0].Key, n, why))
	}
	for _, p := range e.Acquired {
		if p.Expired {
			add(flagLeaked, "") // inspect.Decode's note explains it
			break
		}
	}
}
