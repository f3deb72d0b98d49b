package redistest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseFeatures(t *testing.T) {
	for info, want := range map[string]Features{
		"# Server\r\nredis_version:6.0.16\r\nredis_mode:standalone\r\n": {Version: "6.0.16", Major: 6, Minor: 0},
		"redis_version:6.2.14\r\n":                                      {Version: "6.2.14", Major: 6, Minor: 2},
		"redis_version:7.2.4\r\nvalkey_version:9.1.2\r\n":               {Version: "7.2.4", Major: 7, Minor: 2},
	} {
		f, err := parseFeatures(info)
		require.NoError(t, err, info)
		assert.Equal(t, want, f)
	}
	_, err := parseFeatures("# Server\r\n")
	assert.Error(t, err)

	v60, v62, v70 := Features{Major: 6}, Features{Major: 6, Minor: 2}, Features{Major: 7}
	assert.False(t, v62.ShardedPubSub())
	assert.True(t, v70.ShardedPubSub())
	assert.False(t, v60.ZMScore())
	assert.True(t, v62.ZMScore())
	rules := []string{"resetkeys", "resetchannels", "-@all", "+hello", "+spublish", "+pubsub|shardnumsub", "+zmscore", "~app:*", "&redisson_sc:{app:*"}
	assert.Equal(t, rules, v70.ACLRules(rules))
	assert.Equal(t, []string{"resetkeys", "resetchannels", "-@all", "+hello", "+zmscore", "~app:*", "&redisson_sc:{app:*", "+client|setinfo"}, v62.ACLRules(rules))
	assert.Equal(t, []string{"resetkeys", "-@all", "+hello", "~app:*", "+client|setinfo"}, v60.ACLRules(rules))
}
