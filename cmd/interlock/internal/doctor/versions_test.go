//go:build unix

package doctor

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/cmd/interlock/internal/clitest"
	"github.com/interlock-go/interlock/internal/redistest"
)

// doctor names what the server's version lacks: nothing from Redis 7.0 on;
// on 6.2 sharded pub/sub and the ACL check, on 6.0 ZMSCORE and channel ACL
// rules too. The ACL check is skipped, not failed, before 7.0. The test
// runs on whichever server the harness starts (PATH, or the image of
// INTERLOCK_TEST_IMAGE), so the server matrix covers each branch.
func TestDoctorVersionLimits(t *testing.T) {
	t.Parallel()
	addr := clitest.Addr()
	feat := redistest.FeaturesAt(t, addr)
	t.Logf("Redis %s", feat.Version)
	_, rep := runDoctor(t, "--redis", clitest.RedisURL())
	server := rep.finding(t, "server", addr)
	acl := rep.finding(t, "acl", addr)
	pubsub := rep.finding(t, "pubsub", addr)
	if feat.AtLeast(7, 0) {
		assert.Nil(t, server.Facts["limits"], "%+v", server)
		assert.Equal(t, sevOK, acl.Severity, "%+v", acl)
		assert.Equal(t, true, pubsub.Facts["sharded"])
		return
	}
	limits, ok := server.Facts["limits"].([]any)
	require.True(t, ok, "%+v", server.Facts)
	var text []string
	for _, l := range limits {
		text = append(text, l.(string))
	}
	assert.Equal(t, sevInfo, server.Severity)
	assert.Contains(t, server.Meaning, "lacks some of what Redis 7 has")
	assert.Contains(t, text[0], "no sharded pub/sub")
	assert.Contains(t, text[0], "PubSubSharded is refused")
	zmscore := false
	for _, l := range text {
		zmscore = zmscore || strings.HasPrefix(l, "no ZMSCORE")
	}
	assert.Equal(t, !feat.ZMScore(), zmscore, "ZMSCORE named as missing exactly when it is: %q", text)

	assert.Equal(t, sevInfo, acl.Severity, "%+v", acl)
	assert.Contains(t, acl.Summary, "not checked: ")
	assert.Contains(t, acl.Summary, "neither redis.acl_check_cmd nor ACL DRYRUN")
	assert.Equal(t, false, pubsub.Facts["sharded"])
	assert.Contains(t, pubsub.Summary, "classic pub/sub")

	res := clitest.Run(t, Command, "--redis", clitest.RedisURL())
	assert.Contains(t, res.Stdout, "lacks some of what Redis 7 has")
}
