//go:build unix

package ls

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/cmd/interlock/internal/clitest"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/cmd/interlock/internal/inspect"
	"github.com/interlock-go/interlock/cmd/interlock/internal/kinds"
	"github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/fenced"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/latch"
	"github.com/interlock-go/interlock/nonreentrant"
	"github.com/interlock-go/interlock/rlock"
	"github.com/interlock-go/interlock/rwlock"
	"github.com/interlock-go/interlock/semaphore"
	"github.com/interlock-go/interlock/spin"
)

// lsJSON runs "ls --json" with args and returns the listing, with its
// entries by name.
func lsJSON(t *testing.T, args ...string) (listing, map[string]entry) {
	t.Helper()
	res := clitest.Run(t, Command, append([]string{"--json"}, args...)...)
	require.Equal(t, 0, res.Code, res.Stderr)
	var l listing
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &l), res.Stdout)
	byName := map[string]entry{}
	for _, e := range l.Synchronizers {
		_, dup := byName[e.Name]
		require.False(t, dup, "%s listed twice", e.Name)
		byName[e.Name] = e
	}
	return l, byName
}

// waitSubscribed waits until a client is subscribed to channel.
func waitSubscribed(t *testing.T, rc rueidis.Client, channel string) {
	t.Helper()
	require.Eventually(t, func() bool {
		m, err := rc.Do(t.Context(), rc.B().PubsubNumsub().Channel(channel).Build()).AsIntMap()
		return err == nil && m[channel] > 0
	}, 10*time.Second, 10*time.Millisecond, "nobody subscribed to %s", channel)
}

// background runs f in a goroutine with a context that the test's cleanup
// cancels, then waits for f to return.
func background(t *testing.T, f func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); f(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// One synchronizer of every kind written by interlock, and Java-shaped
// ones made by hand with what goes wrong (a zombie, stale waiters and
// readers, orphan read hold keys, leaked permits), among keys that are no
// synchronizers: ls lists each with its kind and flags, and nothing else.
func TestLsListsEveryKind(t *testing.T) {
	t.Parallel()
	base := clitest.LockName(t)
	c, rc := clitest.NewLockClient(t)
	ctx := interlock.WithOwner(t.Context(), 7)
	bg := interlock.WithOwner(context.Background(), 7) // for cleanups, after t.Context() ended
	n := func(s string) string { return base + ":" + s }

	// Written by interlock.
	m := rlock.New(c, n("rlock"))
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Lock(ctx))
	t.Cleanup(func() { _, _ = m.ForceUnlock(bg) })
	fair := fairlock.New(c, n("fair"), fairlock.WithWaitTimeout(time.Minute))
	require.NoError(t, fair.Lock(ctx))
	t.Cleanup(func() { _, _ = fair.ForceUnlock(bg) })
	background(t, func(ctx context.Context) { _ = fair.Lock(interlock.WithOwner(ctx, 8)) })
	rw := rwlock.New(c, n("read"))
	require.NoError(t, rw.Read().Lock(ctx))
	t.Cleanup(func() { _ = rw.Read().Unlock(bg) })
	w := rwlock.New(c, n("write"))
	require.NoError(t, w.Write().Lock(ctx))
	t.Cleanup(func() { _ = w.Write().Unlock(bg) })
	fm := fenced.New(c, n("fenced"))
	require.NoError(t, fm.Lock(ctx))
	t.Cleanup(func() {
		_ = fm.Unlock(bg)
		rc.Do(bg, rc.B().Del().Key(keys.Prefix(keys.FenceTokenPrefix, n("fenced"))).Build())
	})
	sp := spin.New(c, n("spin"))
	require.NoError(t, sp.Lock(ctx))
	t.Cleanup(func() { _ = sp.Unlock(bg) })
	nr := nonreentrant.New(c, n("nonreentrant"))
	require.NoError(t, nr.Lock(ctx))
	t.Cleanup(func() { _ = nr.Unlock(bg) })
	sem := semaphore.New(c, n("sem")) // never set up: its waiter waits
	background(t, func(ctx context.Context) { _ = sem.Acquire(ctx, 1) })
	pes := semaphore.NewExpirable(c, n("pes"))
	_, err := pes.TrySetPermits(ctx, 2)
	require.NoError(t, err)
	ids, err := pes.Acquire(ctx, 1, time.Minute)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = pes.Release(bg, ids...)
		_, _ = pes.Delete(bg)
	})
	lat := latch.New(c, n("latch"))
	_, err = lat.TrySetCount(ctx, 1)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = lat.Delete(bg) })
	background(t, func(ctx context.Context) { _ = lat.Await(ctx) })
	require.Eventually(t, func() bool {
		l, err := rc.Do(ctx, rc.B().Llen().Key(keys.Prefix(keys.FairQueuePrefix, n("fair"))).Build()).AsInt64()
		return err == nil && l == 1
	}, 10*time.Second, 10*time.Millisecond)
	waitSubscribed(t, rc, keys.LockChannel(n("fair"))+":"+c.ID()+":8") // the fair waiter's own channel
	waitSubscribed(t, rc, keys.SemaphoreChannel(n("sem")))
	waitSubscribed(t, rc, keys.LatchChannel(n("latch")))
	// The receipts of the calls above are deleted shortly after they
	// answered; the listing below counts the hand-made ones only.
	require.Eventually(t, func() bool {
		left, err := rc.Do(ctx, rc.B().Keys().Pattern(keys.ReceiptPrefix+":{"+base+"*").Build()).AsStrSlice()
		return err == nil && len(left) == 0
	}, 10*time.Second, 5*time.Millisecond, "the receipts of the calls are not deleted")

	// Made by hand, as Java would have left them.
	now := time.Now().UnixMilli()
	ms := func(d int64) string { return strconv.FormatInt(d, 10) }
	a1 := clitest.JavaA + ":1"
	const permitID = "0123456789abcdef" // 16 bytes
	clitest.Do(t, rc, []string{
		"HSET " + n("zombie") + " " + a1 + " 1", // no TTL
		"RPUSH " + keys.Prefix(keys.FairQueuePrefix, n("stale")) + " " + clitest.JavaB + ":5",
		"ZADD " + keys.Prefix(keys.FairTimeoutPrefix, n("stale")) + " " + ms(now-1500) + " " + clitest.JavaB + ":5",
		"SET " + inspect.ReadTimeoutKey(n("orphan"), a1, 1) + " 1 PX 60000", // its hash is gone
		"HSET " + n("rw2") + " mode read " + a1 + " 1", "PEXPIRE " + n("rw2") + " 60000",
		"SET " + inspect.ReadTimeoutKey(n("rw2"), a1, 1) + " 1 PX 60000",
		"SET " + inspect.ReadTimeoutKey(n("rw2"), a1, 2) + " 1 PX 60000", // a second hold the hash does not count
		"HSET " + n("deadreader") + " mode read " + clitest.JavaB + ":7 1", "PEXPIRE " + n("deadreader") + " 60000",
		"SET " + n("leak") + " 1", "ZADD " + keys.Suffix(n("leak"), keys.PermitsSuffix) + " " + ms(now-5000) + " " + permitID,
		// No synchronizers.
		"HSET " + n("apphash") + " field value",
		"HSET " + n("nearly") + " user:1 3",
		"SET " + n("counter") + " 5",
		"ZADD " + keys.Suffix(n("zset"), keys.PermitsSuffix) + " 1 short",
		"SET " + keys.UnlockLatch(n("rlock"), keys.RequestID()) + " 1 PX 60000",
		"SET " + keys.Receipt(n("pes"), keys.RequestID()) + " 1 PX 60000",
	}, n("zombie"), keys.Prefix(keys.FairQueuePrefix, n("stale")), keys.Prefix(keys.FairTimeoutPrefix, n("stale")),
		inspect.ReadTimeoutKey(n("orphan"), a1, 1), n("rw2"), inspect.ReadTimeoutKey(n("rw2"), a1, 1), inspect.ReadTimeoutKey(n("rw2"), a1, 2),
		n("deadreader"), n("leak"), keys.Suffix(n("leak"), keys.PermitsSuffix), n("apphash"), n("nearly"), n("counter"),
		keys.Suffix(n("zset"), keys.PermitsSuffix))

	l, got := lsJSON(t, "--redis", clitest.RedisURL(), base+"*")
	want := map[string]struct {
		kind  string
		flags []string
	}{
		"rlock": {kind: kinds.Reentrant}, "fair": {kind: kinds.Fair}, "read": {kind: kinds.ReadWrite},
		"write": {kind: kinds.ReadWrite}, "fenced": {kind: kinds.Fenced}, "spin": {kind: kinds.Reentrant},
		"nonreentrant": {kind: kinds.Reentrant}, "sem": {kind: kinds.Semaphore}, "pes": {kind: kinds.Expirable},
		"latch":      {kind: kinds.Latch},
		"zombie":     {kind: kinds.Reentrant, flags: []string{flagZombie}},
		"stale":      {kind: kinds.Fair, flags: []string{flagStaleWaiters}},
		"orphan":     {kind: kinds.ReadWrite, flags: []string{flagOrphanReads}},
		"rw2":        {kind: kinds.ReadWrite, flags: []string{flagOrphanReads}},
		"deadreader": {kind: kinds.ReadWrite, flags: []string{flagStaleReaders}},
		"leak":       {kind: kinds.Expirable, flags: []string{flagLeaked}},
	}
	for short, w := range want {
		e, ok := got[n(short)]
		if !assert.True(t, ok, "%s is not listed", short) {
			continue
		}
		assert.Equal(t, w.kind, e.Kind, short)
		assert.Equal(t, w.flags, e.Flags, "%s: %v", short, e.Notes)
	}
	assert.Len(t, got, len(want), "nothing else is listed: %v", l.Synchronizers)
	assert.False(t, l.Truncated)
	assert.Equal(t, []string{clitest.Addr()}, l.Nodes)
	assert.Equal(t, int64(1), l.UnlockLatches)
	assert.Equal(t, int64(1), l.Receipts)

	r := got[n("rlock")]
	assert.Equal(t, []inspect.Holder{{Field: c.ID() + ":7", ClientID: c.ID(), OwnerID: 7, Holds: 2}}, r.Holders)
	assert.Equal(t, []string{kinds.Spin, "non-reentrant", kinds.Fair, "non-reentrant-fair"}, r.Alike)
	assert.Positive(t, r.TTLms)
	assert.Len(t, got[n("fair")].Queue, 1)
	assert.Positive(t, got[n("fair")].Subscribers, "the fair waiter listens on its channel")
	assert.Equal(t, "read", got[n("read")].Mode)
	assert.Equal(t, "write", got[n("write")].Mode)
	assert.Equal(t, "1", got[n("fenced")].FenceToken)
	assert.Positive(t, got[n("sem")].Subscribers)
	assert.Positive(t, got[n("latch")].Subscribers)
	require.NotNil(t, got[n("latch")].Count)
	assert.Equal(t, int64(1), *got[n("latch")].Count)
	assert.Len(t, got[n("pes")].Acquired, 1)
	assert.Equal(t, int64(-1), got[n("zombie")].TTLms)
	assert.Equal(t, []orphanKey{{Key: inspect.ReadTimeoutKey(n("rw2"), a1, 2), TTLms: got[n("rw2")].OrphanReadTimeouts[0].TTLms}},
		got[n("rw2")].OrphanReadTimeouts)
	assert.Positive(t, got[n("rw2")].OrphanReadTimeouts[0].TTLms)

	// --counters lists the integer string too; --limit bounds the listing.
	l, got = lsJSON(t, "--redis", clitest.RedisURL(), "--counters", base+"*")
	assert.Equal(t, kinds.Counter, got[n("counter")].Kind)
	assert.Len(t, got, len(want)+1)
	assert.True(t, l.Counters)
	l, got = lsJSON(t, "--redis", clitest.RedisURL(), "--limit", "3", base+"*")
	assert.True(t, l.Truncated)
	assert.LessOrEqual(t, len(got), 3)
	_, got = lsJSON(t, "--redis", clitest.RedisURL(), n("z*"))
	assert.Len(t, got, 1, "PATTERN matches names: only the zombie")

	// The table: one row each, the flags, the notes, the summary.
	res := clitest.Run(t, Command, "--redis", clitest.RedisURL(), "--progress", "off", base+"*")
	require.Equal(t, 0, res.Code, res.Stderr)
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	assert.Equal(t, []string{"NAME", "KIND", "TTL", "HOLDERS", "WAITERS", "FLAGS"}, strings.Fields(lines[0]))
	rows := map[string][]string{}
	for _, line := range lines[1 : 1+len(want)] {
		f := strings.Fields(line)
		rows[f[0]] = f
	}
	assert.Equal(t, []string{n("zombie"), "reentrant*", "no", "expiry", a1, "-", flagZombie}, rows[n("zombie")])
	assert.Equal(t, []string{"1", "queued,", "1", "subscribed", "-"}, rows[n("fair")][len(rows[n("fair")])-5:])
	assert.Equal(t, []string{"count", "1", "(closed)", "1", "subscribed", "-"}, rows[n("latch")][4:], "no expiry")
	assert.Equal(t, []string{"1", "acquired,", "1", "free", "-", "-"}, rows[n("pes")][4:], "one of the two acquired")
	assert.Contains(t, res.Stdout, "\nnote: "+n("zombie")+": ZOMBIE: the lock has no TTL")
	assert.Contains(t, res.Stdout, "\nreentrant*: an RLock, or a spin lock")
	assert.Contains(t, res.Stdout, "\n16 synchronizers (6 flagged); ")
	assert.Contains(t, res.Stdout, " keys matching *"+base+"* scanned on 1 node; not listed: 1 unlock latch key, 1 receipt key\n")
	assert.Empty(t, res.Stderr, "--progress off")
}

// On 100,000 keys that are no synchronizers ls finds the one lock among
// them with SCAN alone (never KEYS), and shows its progress on stderr.
func TestLsLargeKeyspace(t *testing.T) {
	t.Parallel()
	redistest.RequireProcess(t) // a server of its own: the whole keyspace is scanned
	s := redistest.Standalone(t)
	rc := redistest.NewClient(t, s.Addr())
	const total = 100_000
	cmds := make(rueidis.Commands, 0, total/1000)
	for i := 0; i < total; i += 1000 {
		mset := rc.B().Mset().KeyValue()
		for j := i; j < i+1000; j++ {
			mset = mset.KeyValue("key:"+strconv.Itoa(j), "value:"+strconv.Itoa(j))
		}
		cmds = append(cmds, mset.Build())
	}
	for _, r := range rc.DoMulti(t.Context(), cmds...) {
		require.NoError(t, r.Error())
	}
	c, err := interlock.New(rc)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	ctx := interlock.WithOwner(t.Context(), 1)
	m := rlock.New(c, "the-lock")
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, rc.Do(ctx, rc.B().ConfigResetstat().Build()).Error())

	start := time.Now()
	res := clitest.Run(t, Command, "--redis", "redis://"+s.Addr(), "--json", "--progress", "0")
	took := time.Since(start)
	require.Equal(t, 0, res.Code, res.Stderr)
	var l listing
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &l))
	require.Len(t, l.Synchronizers, 1)
	assert.Equal(t, "the-lock", l.Synchronizers[0].Name)
	assert.GreaterOrEqual(t, l.ScannedKeys, int64(total+1))
	progress := strings.Split(strings.TrimSpace(res.Stderr), "\n")
	assert.Greater(t, len(progress), total/defaultCount/2, "a line per SCAN call")
	assert.Regexp(t, `^interlock ls: scanned \d+ keys, [01] synchronizers?$`, progress[0])
	assert.Equal(t, fmt.Sprintf("interlock ls: scanned %d keys on 1 node, found 1 synchronizer", l.ScannedKeys),
		progress[len(progress)-1])

	stats, err := rc.Do(ctx, rc.B().Info().Section("commandstats").Build()).ToString()
	require.NoError(t, err)
	assert.Contains(t, stats, "cmdstat_scan:")
	assert.NotContains(t, stats, "cmdstat_keys:")
	t.Logf("ls scanned %d keys in %v (%d progress lines)", l.ScannedKeys, took.Round(time.Millisecond), len(progress))
}

// On a cluster ls scans every master, once each: a lock on each master is
// listed once, and the replicas are not scanned.
func TestLsCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.ClusterWith(t, redistest.WithReplicas(1))
	rc := cl.Client(t)
	c, err := interlock.New(rc)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	ctx := interlock.WithOwner(t.Context(), 1)
	masters := map[string]string{} // master address -> the lock on it
	for i := 0; len(masters) < len(cl.Masters()); i++ {
		name := fmt.Sprintf("ls-cluster:%d", i)
		addr := cl.NodeForKey(name).Addr()
		if _, ok := masters[addr]; ok {
			continue
		}
		masters[addr] = name
		require.NoError(t, rlock.New(c, name).Lock(ctx))
	}

	l, got := lsJSON(t, "--redis", strings.Join(cl.Addrs(), ","), "ls-cluster:*")
	var want []string
	for _, m := range cl.Masters() {
		want = append(want, m.Addr())
		assert.Contains(t, got, masters[m.Addr()])
	}
	assert.ElementsMatch(t, want, l.Nodes, "the masters, and only they, are scanned")
	assert.Len(t, got, len(masters))
}

// Names are read back from every kind of key and channel Redisson
// derives, braces or not.
func TestLsNames(t *testing.T) {
	t.Parallel()
	const owner = clitest.JavaA + ":12"
	for _, name := range []string{"orders:42", "{order}:42", "a{b}c", "x", "{x}y"} {
		got, _, ok := unprefixName(keys.Prefix(keys.FairQueuePrefix, name), keys.FairQueuePrefix)
		assert.True(t, ok, name)
		assert.Equal(t, name, got)
		got, _, ok = unsuffixName(keys.Suffix(name, keys.PermitsSuffix), keys.PermitsSuffix)
		assert.True(t, ok, name)
		assert.Equal(t, name, got)
		got, o, k, _, ok := readTimeoutName(inspect.ReadTimeoutKey(name, owner, 3))
		assert.True(t, ok, name)
		assert.Equal(t, []any{name, owner, int64(3)}, []any{got, o, k})
		for ch, family := range map[string]int{
			keys.LockChannel(name): chanLock, keys.LockChannel(name) + ":" + owner: chanLock,
			keys.Prefix(keys.ReadWriteChannelPrefix, name): chanReadWrite, keys.SemaphoreChannel(name): chanSemaphore,
			keys.LatchChannel(name): chanLatch,
		} {
			got, f, _, ok := channelName(ch)
			assert.True(t, ok, ch)
			assert.Equal(t, []any{name, family}, []any{got, f}, ch)
		}
	}
	_, braced, _ := unwrapName("{x}")
	assert.True(t, braced, `"{x}" is also what the name "{x}" gives`)
	for _, bad := range []string{"plain", "redisson_lock_queue:plain"} {
		_, _, ok := unprefixName(bad, keys.FairQueuePrefix)
		assert.False(t, ok, bad)
	}
	_, _, _, _, ok := readTimeoutName("{x}:user:1:rwlock_timeout:1")
	assert.False(t, ok, "the client id is no UUID")

	assert.True(t, lockShaped(map[string]string{owner: "2"}))
	assert.True(t, lockShaped(map[string]string{"mode": "write", owner + ":write": "1", owner: "1"}))
	assert.False(t, lockShaped(map[string]string{"user:12": "2"}))
	assert.False(t, lockShaped(map[string]string{owner: "x"}))
	assert.False(t, lockShaped(map[string]string{"mode": "read"}))
	assert.False(t, lockShaped(map[string]string{owner: "1", "other": "1"}))
}

// globMatch follows Redis's glob rules.
func TestLsGlob(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true}, {"*", "abc", true}, {"a*", "abc", true}, {"a*", "bac", false},
		{"*c", "abc", true}, {"a*c", "abbbc", true}, {"a*c", "abcd", false}, {"a?c", "abc", true},
		{"a?c", "ac", false}, {"[ab]x", "bx", true}, {"[^ab]x", "bx", false}, {"[^ab]x", "cx", true},
		{"[a-c]", "b", true}, {"[c-a]", "b", true}, {"[a-c]", "d", false}, {`a\*`, "a*", true},
		{`a\*`, "ab", false}, {"*:*:x", "a:b:c:x", true}, {"orders:*", "orders:", true},
		{"a[", "a", false}, {"*a*b*", "xaxxbx", true}, {"*a*b*", "xbxa", false},
	} {
		assert.Equal(t, c.want, globMatch(c.pattern, c.s), "%q ~ %q", c.pattern, c.s)
	}
	assert.Equal(t, "orders:", globLiteralPrefix("orders:*"))
	assert.Equal(t, "a*b", globLiteralPrefix(`a\*b?`))
	assert.Equal(t, `*a\*b*`, containsPattern(`a\*b?`))
	assert.Empty(t, containsPattern("*x"))
}

// ls's flags are documented and checked.
func TestLsUsage(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("ls", flag.ContinueOnError)
	redisconn.AddFlag(fs, func(string) string { return "" })
	for _, f := range []string{"json", "limit", "count", "counters", "progress"} {
		fs.Bool(f, false, "")
	}
	fs.VisitAll(func(f *flag.Flag) { assert.Contains(t, usage, "  --"+f.Name+" ", f.Name) })
	for _, bad := range []string{"ls --nope", "ls a b", "ls --limit -1", "ls --count 0", "ls --progress never"} {
		res := clitest.Run(t, Command, strings.Fields(bad)[1:]...)
		assert.Equal(t, exit.Usage, res.Code, bad)
		assert.Contains(t, res.Stderr, "(see 'interlock help ls')", bad)
	}
	res := clitest.Run(t, Command, "--redis", "redis://127.0.0.1:1")
	assert.Equal(t, exit.Unavailable, res.Code, res.Stderr)
	res = clitest.Run(t, Command, "--help")
	assert.Equal(t, 0, res.Code)
	assert.Equal(t, usage, res.Stdout)
}
