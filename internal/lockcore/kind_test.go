package lockcore

import (
	"context"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/renewal"
	"github.com/interlock-go/interlock/internal/report"
	"github.com/interlock-go/interlock/internal/runtime"
	"github.com/interlock-go/interlock/internal/script"
)

func TestMS(t *testing.T) {
	assert.Equal(t, "1500", MS(1500*time.Millisecond+999*time.Microsecond), "truncated to whole ms")
	assert.Equal(t, "0", MS(999*time.Microsecond))
	assert.Equal(t, "30000", MS(30*time.Second))
}

// RenewArgs sends what lua/renew.lua documents: KEYS the lock hashes,
// ARGV the lease in ms and then each lock's holder.
func TestRenewArgs(t *testing.T) {
	ks, argv := RenewArgs(10*time.Second, []*renewal.Entry{{Key: "a", Owner: "id:1"}, {Key: "b", Owner: "id:2:write"}})
	assert.Equal(t, []string{"a", "b"}, ks)
	assert.Equal(t, []string{"10000", "id:1", "id:2:write"}, argv)
	assert.Same(t, script.Renew(), RenewTask.Script)
	assert.Equal(t, interlock.ErrLockLost, RenewTask.Lost)
}

// Every Arg source fills in the value the engine knows for the call.
func TestFillEveryArg(t *testing.T) {
	c, _ := newClient(t)
	runtime.Of(c).SetWallClock(func() time.Time { return time.UnixMilli(1_700_000_000_123) })
	kind := Kind{
		Event:   string(interlock.KindRLock),
		Suffix:  ":write",
		Channel: keys.LockChannel,
		Keys:    []func(string) string{Prefixed("redisson_lock_queue"), func(n string) string { return keys.Suffix(n, "fence") }},
	}
	l := New(c, &kind, "orders")
	owner, holder, err := l.owner(interlock.WithOwner(context.Background(), 42), report.OpAcquire)
	require.NoError(t, err)
	require.Equal(t, c.ID()+":42", owner)
	require.Equal(t, owner+":write", holder, "the holder is the owner plus Kind.Suffix")

	v := &vals{
		owner: owner, holder: holder,
		lease: 1500*time.Millisecond + 999*time.Microsecond, grace: 2 * time.Minute,
		publish: "SPUBLISH", latch: "redisson_unlock_latch:{orders}:00ff", expected: 3,
	}
	cases := []struct {
		arg  Arg
		want string
	}{
		{Name, "orders"},
		{Channel, "redisson_lock__channel:{orders}"},
		{Key(0), "redisson_lock_queue:{orders}"},
		{Key(1), "{orders}:fence"},
		{OwnerKey(0, ""), "redisson_lock_queue:{orders}:" + owner},
		{OwnerKey(1, ":rwlock_timeout"), "{orders}:fence:" + owner + ":rwlock_timeout"},
		{Owner, owner + ":write"},
		{OwnerPlus(""), owner},
		{OwnerPlus(":read"), owner + ":read"},
		{Lease, "1500"},
		{Grace, "120000"},
		{Now, "1700000000123"},
		{Publish, "SPUBLISH"},
		{Latch, "redisson_unlock_latch:{orders}:00ff"},
		{LatchTTL, "20000"},
		{Expected, "3"},
		{Lit("0"), "0"},
		{Lit(""), ""},
	}
	args := make([]Arg, len(cases))
	for i, tc := range cases {
		args[i] = tc.arg
	}
	// KEYS and ARGV are filled alike, and neither runs into the other.
	ks, got := l.fill(nil, &Call{Keys: args[:2], Args: args}, v)
	assert.Equal(t, got[:2], ks)
	assert.Equal(t, 2, cap(ks))
	require.Len(t, got, len(cases))
	for i, tc := range cases {
		assert.Equal(t, tc.want, got[i], "arg %d", i)
	}

	// Now reads the clock at every call.
	runtime.Of(c).SetWallClock(func() time.Time { return time.UnixMilli(5) })
	args1 := func(a Arg) []string { _, out := l.fill(nil, &Call{Args: []Arg{a}}, v); return out }
	assert.Equal(t, []string{"5"}, args1(Now))
	runtime.Of(c).SetWallClock(nil)
	now, err := strconv.ParseInt(args1(Now)[0], 10, 64)
	require.NoError(t, err)
	assert.InDelta(t, time.Now().UnixMilli(), now, 5000)
	ks, got = l.fill(nil, &Call{}, v)
	assert.Empty(t, ks)
	assert.Empty(t, got)
}

// slot is one KEYS or ARGV entry as a script's header documents it: its
// label, and a pattern for the value the engine must send.
type slot struct{ label, want string }

func lit(s string) string { return "^" + regexp.QuoteMeta(s) + "$" }

var headerLine = regexp.MustCompile(`(?m)^-- (KEYS|ARGV)\[(\d+)\]\s+(.*)$`)

// header returns the labels of a script's KEYS and ARGV, in order, and
// how many of each are required: entries documented as "(... only)" come
// last and may be left out.
func header(t *testing.T, s *script.Script) (keyLabels, argLabels []string, required map[string]int) {
	t.Helper()
	required = map[string]int{}
	for _, m := range headerLine.FindAllStringSubmatch(s.Source(), -1) {
		label := strings.TrimSpace(regexp.MustCompile(`\s{2,}`).Split(m[3], 2)[0])
		i, _ := strconv.Atoi(m[2])
		list := &keyLabels
		if m[1] == "ARGV" {
			list = &argLabels
		}
		require.Equal(t, len(*list)+1, i, "%s: %s[%d] out of order", s.Name(), m[1], i)
		*list = append(*list, label)
		if !strings.Contains(m[3], " only)") {
			require.Equal(t, required[m[1]], i-1, "%s: %s[%d] is required after an optional one", s.Name(), m[1], i)
			required[m[1]] = i
		}
	}
	return keyLabels, argLabels, required
}

// checkCall asserts that r sends exactly the KEYS and ARGV that its
// script's header documents, with the values in want.
func checkCall(t *testing.T, r record, wantKeys, wantArgs []slot) {
	t.Helper()
	keyLabels, argLabels, required := header(t, r.script)
	for _, part := range []struct {
		what   string
		got    []string
		labels []string
		want   []slot
	}{{"KEYS", r.keys(), keyLabels, wantKeys}, {"ARGV", r.argv(), argLabels, wantArgs}} {
		if n := len(part.want); n >= required[part.what] && n < len(part.labels) {
			part.labels = part.labels[:n] // the optional entries were left out
		}
		require.Len(t, part.labels, len(part.want), "%s: the header's %s", r.script.Name(), part.what)
		require.Len(t, part.got, len(part.want), "%s: %s sent", r.script.Name(), part.what)
		for i, w := range part.want {
			assert.Equal(t, w.label, part.labels[i], "%s: header of %s[%d]", r.script.Name(), part.what, i+1)
			assert.Regexp(t, w.want, part.got[i], "%s: %s[%d] (%s)", r.script.Name(), part.what, i+1, w.label)
		}
	}
}

// The KEYS and ARGV the engine sends for Redisson's RLock are the ones
// lua/acquire.lua, unlock.lua, undo_acquire.lua and force_unlock.lua
// document, in their order.
func TestWireMatchesScriptHeaders(t *testing.T) {
	c, tp := newClient(t, interlock.WithWatchdogTimeout(10*time.Second))
	ctx := testCtx(t)
	name := lockName(t)
	l := New(c, &testKind, name)
	owner, err := c.Owner(ctx)
	require.NoError(t, err)
	ch := "redisson_lock__channel:{" + name + "}"

	require.NoError(t, l.LockLease(ctx, 7*time.Second))
	require.NoError(t, l.LockLease(ctx, 8*time.Second))
	require.NoError(t, l.Unlock(ctx)) // keeps the outer hold's lease
	require.NoError(t, l.Unlock(ctx))
	lost := false
	tp.setHook(func(ctx context.Context, r record, next func() rueidis.RedisResult) rueidis.RedisResult {
		if r.script != script.Acquire() || lost {
			return next()
		}
		lost = true
		next()
		return rueidis.NewErrorResult(io.ErrUnexpectedEOF)
	})
	require.ErrorIs(t, l.Lock(ctx), io.ErrUnexpectedEOF)
	require.False(t, exists(t, tp, name), "the lost acquisition was taken back")
	require.NoError(t, l.Lock(ctx))
	ok, err := l.ForceUnlock(ctx)
	require.NoError(t, err)
	require.True(t, ok)

	acquires := tp.sent(script.Acquire())
	require.Len(t, acquires, 4)
	hash := slot{"lock hash", lit(name)}
	checkCall(t, acquires[0], []slot{hash}, []slot{{"lease in ms", lit("7000")}, {"owner", lit(owner)}})
	checkCall(t, acquires[1], []slot{hash}, []slot{{"lease in ms", lit("8000")}, {"owner", lit(owner)}})
	checkCall(t, acquires[2], []slot{hash}, []slot{{"lease in ms", lit("10000")}, {"owner", lit(owner)}})

	unlocks := tp.sent(script.Unlock())
	require.Len(t, unlocks, 2)
	latch := "^" + regexp.QuoteMeta("redisson_unlock_latch:{"+name+"}:") + "[0-9a-f]{32}$"
	unlockKeys := []slot{hash, {"channel", lit(ch)}, {"unlock latch", latch}}
	for i, lease := range []string{"7000", "10000"} {
		checkCall(t, unlocks[i], unlockKeys, []slot{{"message", lit("0")}, {"lease in ms", lit(lease)},
			{"owner", lit(owner)}, {"publish command", lit("PUBLISH")}, {"latch TTL in ms", lit("20000")}})
	}
	assert.NotEqual(t, unlocks[0].keys()[2], unlocks[1].keys()[2], "each unlock has its own latch")

	undos := tp.sent(script.UndoAcquire())
	require.Len(t, undos, 1)
	checkCall(t, undos[0], []slot{hash, {"channel", lit(ch)}}, []slot{{"message", lit("0")}, {"owner", lit(owner)},
		{"expected hold count", lit("1")}, {"publish command", lit("PUBLISH")}})

	forces := tp.sent(script.ForceUnlock())
	require.Len(t, forces, 1)
	checkCall(t, forces[0], []slot{hash, {"channel", lit(ch)}}, []slot{{"message", lit("0")}, {"publish command", lit("PUBLISH")}})
}
