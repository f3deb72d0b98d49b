package compat_test

import (
	"testing"

	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
)

// The golden replays watch each release with pub/sub taps. Redis 6.0 and
// 6.2 have no sharded pub/sub: there PubSubAuto, like Redisson, publishes
// with PUBLISH on a cluster too, so the replays expect PUBLISH, a classic
// tap sees every release, and there is no SSUBSCRIBE tap to open.

// shardedPubSub reports whether the server at addr has sharded pub/sub
// (Redis 7.0 and later, Valkey).
func shardedPubSub(t testing.TB, addr string) bool {
	t.Helper()
	return redistest.FeaturesAt(t, addr).ShardedPubSub()
}

// Each set of taps pauses classicSettle before it marks a step that
// publishes, as the tap that must see nothing does on a server with
// sharded pub/sub: stray messages have that long to arrive, and the
// Client's latch deleter, which runs after the unlock has returned, has
// that long to finish before the step's checks read the latches.

// standaloneTaps returns the taps of a replay on a standalone server,
// where releases are PUBLISHed: a PSUBSCRIBE tap on *match* that sees each
// one, and, where the server has sharded pub/sub, an SSUBSCRIBE tap on
// channel that sees none.
func standaloneTaps(t *testing.T, addr, name, match, channel string) []*pubTap {
	markP := "compat-mark:" + name
	classic := &pubTap{
		label: "PSUBSCRIBE", s: openStream(t, addr, 1, "PSUBSCRIBE", "*"+match+"*"),
		kind: "pmessage", receives: true, markCmd: "PUBLISH", markChan: markP,
	}
	if !shardedPubSub(t, addr) {
		classic.settle = classicSettle
		return []*pubTap{classic}
	}
	markS := keys.Suffix(name, "compat-mark")
	return []*pubTap{classic, {
		label: "SSUBSCRIBE", s: openStream(t, addr, 2, "SSUBSCRIBE", channel, markS),
		kind: "smessage", receives: false, markCmd: "SPUBLISH", markChan: markS, settle: classicSettle,
	}}
}

// clusterTaps returns the taps of a replay on node, the cluster node that
// owns the lock's slot. With sharded pub/sub, releases are SPUBLISHed: an
// SSUBSCRIBE tap on channel sees each one, a classic SUBSCRIBE tap on the
// same channel none. Without (Redis 6), they are PUBLISHed, and the
// SUBSCRIBE tap sees each one.
func clusterTaps(t *testing.T, node, name, channel string) []*pubTap {
	markC := "compat-mark:" + name
	classic := &pubTap{
		label: "SUBSCRIBE", s: openStream(t, node, 2, "SUBSCRIBE", channel, markC),
		kind: "message", receives: true, markCmd: "PUBLISH", markChan: markC, settle: classicSettle,
	}
	if !shardedPubSub(t, node) {
		return []*pubTap{classic}
	}
	classic.receives = false
	markS := keys.Suffix(name, "compat-mark")
	return []*pubTap{{
		label: "SSUBSCRIBE", s: openStream(t, node, 2, "SSUBSCRIBE", channel, markS),
		kind: "smessage", receives: true, markCmd: "SPUBLISH", markChan: markS,
	}, classic}
}
