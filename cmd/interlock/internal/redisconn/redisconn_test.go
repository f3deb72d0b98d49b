package redisconn

import (
	"flag"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRedisOptions(t *testing.T) {
	t.Parallel()
	opt, err := Options([]string{"redis://h1:7000", "h2:7001", "redis://h1:7000"})
	require.NoError(t, err)
	assert.Equal(t, []string{"h1:7000", "h2:7001"}, opt.InitAddress)

	opt, err = Options([]string{"rediss://u:p@h:6380/2"})
	require.NoError(t, err)
	assert.NotNil(t, opt.TLSConfig)
	assert.Equal(t, "u", opt.Username)
	assert.Equal(t, "p", opt.Password)
	assert.Equal(t, 2, opt.SelectDB)

	opt, err = Options([]string{"unix:///run/redis.sock"})
	require.NoError(t, err)
	assert.Equal(t, []string{"/run/redis.sock"}, opt.InitAddress)
	assert.NotNil(t, opt.DialCtxFn)

	for _, bad := range [][]string{
		{"redis://u:secret@h1", "redis://h2"},
		{"redis://h1", "rediss://h2"},
		{"unix:///a.sock", "redis://h"},
		{"http://u:secret@h"},
	} {
		_, err := Options(bad)
		require.Error(t, err, bad)
		assert.NotContains(t, err.Error(), "secret", "passwords never appear in errors")
	}
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "redis://u:xxxxx@h:1/0", redactURL("redis://u:pw@h:1/0"))
	assert.Equal(t, "redis://u@h", redactURL("redis://u@h"))
	assert.Equal(t, "redis://h/a@b", redactURL("redis://h/a@b"))
	assert.Equal(t, "h:1", redactURL("h:1"))
}

func TestRedisFlag(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	f := AddFlag(fs, func(string) string { return "redis://env:1, redis://env:2" })
	assert.Equal(t, []string{"redis://env:1", "redis://env:2"}, f.URLs, "INTERLOCK_REDIS is the default")
	require.NoError(t, fs.Parse([]string{"--redis", "a:1,b:2", "--redis=c:3"}))
	assert.Equal(t, []string{"a:1", "b:2", "c:3"}, f.URLs, "--redis replaces the default and accumulates")

	fs = flag.NewFlagSet("y", flag.ContinueOnError)
	f = AddFlag(fs, func(string) string { return "" })
	assert.Equal(t, []string{DefaultURL}, f.URLs)
	assert.Error(t, f.Set(" , "))
}
