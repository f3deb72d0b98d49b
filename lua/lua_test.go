package lua_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/lua"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, redistest.GoleakOptions()...) }

// Every script has its header and its SHA1, and Lookup finds it by name.
func TestScripts(t *testing.T) {
	all := lua.All()
	require.NotEmpty(t, all)
	for i, s := range all {
		if i > 0 {
			assert.Less(t, all[i-1].Name(), s.Name(), "All is sorted by name")
		}
		assert.True(t, strings.HasPrefix(s.Source(), "-- "+s.Name()+":"), "%s.lua starts with its header", s.Name())
		for _, part := range []string{"KEYS[1", "ARGV[1", "Returns", "Redisson"} {
			assert.Contains(t, s.Source(), part, "%s.lua header", s.Name())
		}
		assert.Regexp(t, `^[0-9a-f]{40}$`, s.SHA1())
		got, ok := lua.Lookup(s.Name())
		assert.True(t, ok)
		assert.Same(t, s, got)
	}
	_, ok := lua.Lookup("no_such_script")
	assert.False(t, ok)
	all[0] = nil
	assert.NotNil(t, lua.All()[0], "All returns a copy")
}

// An acquire or unlock resent after a lost reply could count a hold twice:
// those are never retryable. A renewal is.
func TestRetryable(t *testing.T) {
	for name, want := range map[string]bool{"acquire": false, "unlock": false, "fair_acquire": false, "renew": true, "sem_release": true} {
		s, ok := lua.Lookup(name)
		require.True(t, ok, name)
		assert.Equal(t, want, s.Retryable(), name)
	}
}

// Preload leaves every script cached on every node, under its SHA1.
func TestPreload(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tc := range []struct {
		name  string
		addrs func(t *testing.T) []string
	}{
		{"standalone", func(t *testing.T) []string { return []string{redistest.Standalone(t).Addr()} }},
		{"cluster", func(t *testing.T) []string { return redistest.Cluster(t).Addrs() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addrs := tc.addrs(t)
			c := redistest.NewClient(t, addrs...)
			require.NoError(t, lua.Preload(ctx, c))
			for addr, node := range c.Nodes() {
				for _, s := range lua.All() {
					cached, err := node.Do(ctx, node.B().ScriptExists().Sha1(s.SHA1()).Build()).AsIntSlice()
					require.NoError(t, err)
					assert.Equal(t, []int64{1}, cached, "%s on %s", s.Name(), addr)
				}
			}
			assert.Len(t, c.Nodes(), len(addrs))
		})
	}
	assert.Error(t, lua.Preload(ctx, nil))
}
