package redistest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/redisproc"
)

// Features is what a server has of the commands added after Redis 6.0,
// read from its version: Redis 6.0 and 6.2 lack some of what the tests use
// to look at the server (sharded pub/sub, ACL dry runs, ZMSCORE...). Valkey
// reports redis_version 7.2.4 and has everything Redis 7.2 has.
type Features struct {
	Version      string // INFO's redis_version
	Major, Minor int
}

// AtLeast reports whether the server is Redis major.minor or later.
func (f Features) AtLeast(major, minor int) bool {
	return f.Major > major || f.Major == major && f.Minor >= minor
}

// ShardedPubSub reports whether the server has SPUBLISH, SSUBSCRIBE and
// PUBSUB SHARDCHANNELS/SHARDNUMSUB (Redis 7.0).
func (f Features) ShardedPubSub() bool { return f.AtLeast(7, 0) }

// ACLCheck reports whether the server has ACL DRYRUN and
// redis.acl_check_cmd (Redis 7.0).
func (f Features) ACLCheck() bool { return f.AtLeast(7, 0) }

// ChannelACL reports whether ACL rules may name pub/sub channels (&pattern,
// resetchannels; Redis 6.2).
func (f Features) ChannelACL() bool { return f.AtLeast(6, 2) }

// ZMScore reports whether the server has ZMSCORE (Redis 6.2).
func (f Features) ZMScore() bool { return f.AtLeast(6, 2) }

// FeaturesOf returns the Features of the server (any node) rc talks to,
// failing tb when it cannot tell. It asks every time (INFO server): ports
// are reused, by servers of other versions too.
func FeaturesOf(tb testing.TB, rc rueidis.Client) Features {
	tb.Helper()
	for addr, n := range rc.Nodes() {
		info, err := n.Do(context.Background(), n.B().Info().Section("server").Build()).ToString()
		require.NoError(tb, err, "INFO server on %s", addr)
		f, err := parseFeatures(info)
		require.NoError(tb, err, "%s", addr)
		return f
	}
	require.FailNow(tb, "the client has no node")
	return Features{}
}

// FeaturesAt returns the Features of the server at addr, failing tb when
// it cannot tell.
func FeaturesAt(tb testing.TB, addr string) Features {
	tb.Helper()
	info, err := redisproc.CommandString(context.Background(), addr, "INFO", "server")
	require.NoError(tb, err, "INFO server on %s", addr)
	f, err := parseFeatures(info)
	require.NoError(tb, err, "%s", addr)
	return f
}

// RequireFeature skips tb when has is false, naming what the server lacks.
func RequireFeature(tb testing.TB, f Features, has bool, what string) {
	tb.Helper()
	if !has {
		tb.Skipf("Redis %s has no %s", f.Version, what)
	}
}

// parseFeatures reads redis_version from INFO's text.
func parseFeatures(info string) (Features, error) {
	for line := range strings.Lines(info) {
		v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:")
		if !ok {
			continue
		}
		parts := strings.SplitN(v, ".", 3)
		f := Features{Version: v}
		var err error
		if f.Major, err = strconv.Atoi(parts[0]); err == nil && len(parts) > 1 {
			f.Minor, err = strconv.Atoi(parts[1])
		}
		if err != nil {
			return Features{}, fmt.Errorf("redistest: redis_version %q: %w", v, err)
		}
		return f, nil
	}
	return Features{}, fmt.Errorf("redistest: INFO server has no redis_version")
}

// ACLRules returns rules, ACL SETUSER rules, as docs/operations.md adapts
// them to Redis 6: before 7.0 without the sharded pub/sub commands, which
// the server would refuse, and with +client|setinfo, so that rueidis's
// CLIENT SETINFO is answered "unknown subcommand" rather than logged as an
// ACL denial; before 6.2 also without ZMSCORE and every channel rule (6.0
// has no channel permissions: every user may use every channel).
func (f Features) ACLRules(rules []string) []string {
	var out []string
	for _, r := range rules {
		switch {
		case !f.ShardedPubSub() && slices.Contains([]string{"+spublish", "+ssubscribe", "+sunsubscribe", "+pubsub|shardnumsub"}, r):
		case !f.ChannelACL() && (r == "resetchannels" || r == "allchannels" || strings.HasPrefix(r, "&") || r == "+zmscore"):
		default:
			out = append(out, r)
		}
	}
	if !f.AtLeast(7, 0) && slices.Contains(rules, "+hello") {
		out = append(out, "+client|setinfo")
	}
	return out
}
