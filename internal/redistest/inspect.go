package redistest

import (
	"context"
	"slices"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What the tests read of a server's keys, failing tb on an error. rc may
// be a cluster client: EveryNode asks each node.

// EveryNode sends the command build makes to every node of rc (the one
// server of a standalone client) and returns the replies' strings, sorted,
// each once: keyless commands such as KEYS see one node's keys only.
func EveryNode(tb testing.TB, rc rueidis.Client, build func(rueidis.Builder) rueidis.Completed) []string {
	tb.Helper()
	var out []string
	for _, n := range rc.Nodes() {
		v, err := n.Do(context.Background(), build(n.B())).AsStrSlice()
		require.NoError(tb, err)
		out = append(out, v...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Exists reports whether key exists.
func Exists(tb testing.TB, rc rueidis.Client, key string) bool {
	tb.Helper()
	n, err := rc.Do(context.Background(), rc.B().Exists().Key(key).Build()).AsInt64()
	require.NoError(tb, err)
	return n == 1
}

// PTTL returns key's PTTL in ms (-1: no TTL, -2: no key).
func PTTL(tb testing.TB, rc rueidis.Client, key string) int64 {
	tb.Helper()
	n, err := rc.Do(context.Background(), rc.B().Pttl().Key(key).Build()).AsInt64()
	require.NoError(tb, err)
	return n
}

// Do runs an arbitrary command, args[1] its key (it routes the command to
// its node), and fails tb on an error reply.
func Do(tb testing.TB, rc rueidis.Client, args ...string) rueidis.RedisResult {
	tb.Helper()
	res := rc.Do(context.Background(), rc.B().Arbitrary(args[0]).Keys(args[1]).Args(args[2:]...).Build())
	require.NoError(tb, res.Error(), "%q", args)
	return res
}

// Receipts returns the receipt keys of the synchronizer called name (a
// semaphore's or a latch's: interlock_receipt:{name}:<request id>).
func Receipts(tb testing.TB, rc rueidis.Client, name string) []string {
	tb.Helper()
	return EveryNode(tb, rc, func(b rueidis.Builder) rueidis.Completed {
		return b.Keys().Pattern("interlock_receipt:{" + Glob(name) + "}:*").Build()
	})
}

// OneReceipt asserts that what ran since the last call, op, left at most
// one receipt of name, expiring within 30s, and deletes it.
func OneReceipt(tb testing.TB, rc rueidis.Client, name, op string) {
	tb.Helper()
	ks := Receipts(tb, rc, name)
	assert.LessOrEqual(tb, len(ks), 1, "%s left receipts %q", op, ks)
	deleteReceipts(tb, rc, ks, op+": ")
}

// ClearReceipts asserts that every receipt of name expires within 30s,
// and deletes them, so that a later OneReceipt counts only its own.
func ClearReceipts(tb testing.TB, rc rueidis.Client, name string) {
	tb.Helper()
	deleteReceipts(tb, rc, Receipts(tb, rc, name), "")
}

// deleteReceipts asserts that each receipt of ks expires within 30s, or is
// gone already (the Client deletes a receipt once answered), and deletes
// it; what starts the messages.
func deleteReceipts(tb testing.TB, rc rueidis.Client, ks []string, what string) {
	tb.Helper()
	for _, k := range ks {
		ms := PTTL(tb, rc, k)
		assert.True(tb, ms > 0 || ms == -2, "%sreceipt %s has no TTL", what, k)
		assert.LessOrEqual(tb, ms, int64(30000), "%sreceipt %s", what, k)
		require.NoError(tb, rc.Do(context.Background(), rc.B().Del().Key(k).Build()).Error())
	}
}
