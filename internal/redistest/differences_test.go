package redistest_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/redistest"
)

// TestServerDifferences pins what the three servers of the matrix answer
// differently, where interlock or its tools read it (docs/compatibility.md,
// "Servers"). Everything the lock scripts use (EVALSHA, hashes, PUBLISH and
// SPUBLISH from a script, PUBSUB SHARDNUMSUB, WAIT) answers alike.
func TestServerDifferences(t *testing.T) {
	type want struct {
		infoVersion string   // INFO server's redis_version
		hello       string   // HELLO 3's server field
		luaVersion  string   // redis.REDIS_VERSION inside a script
		serverTable bool     // Lua has the global table server (Valkey's alias of redis)
		clientInfo  []string // CLIENT INFO fields that are new since Redis 7.0
	}
	wants := map[string]want{
		redistest.Redis7.Name():  {infoVersion: "7.0.15", hello: "redis", luaVersion: "7.0.15"},
		redistest.Redis8.Name():  {infoVersion: "8.0.2", hello: "redis", luaVersion: "8.0.2", clientInfo: []string{"watch", "lib-name", "lib-ver", "io-thread"}},
		redistest.Valkey8.Name(): {infoVersion: "7.2.4", hello: "valkey", luaVersion: "7.2.4", serverTable: true, clientInfo: []string{"watch", "lib-name", "lib-ver", "capa", "tot-net-in", "tot-net-out", "tot-cmds"}},
	}
	newSince70 := []string{"watch", "lib-name", "lib-ver", "io-thread", "capa", "tot-net-in", "tot-net-out", "tot-cmds"}
	for _, img := range redistest.Images() {
		t.Run(img.Name(), func(t *testing.T) {
			t.Parallel()
			w, ok := wants[img.Name()]
			require.True(t, ok, "no expectations for %s", img.Name())
			srv := redistest.StartContainer(t, img)
			c := srv.Client(t)
			ctx := t.Context()
			t.Logf("%s %s at %s", img.Server, srv.Container().Version(), srv.Addr())

			info, err := c.Do(ctx, c.B().Info().Section("server").Build()).ToString()
			require.NoError(t, err)
			assert.Contains(t, info, "redis_version:"+w.infoVersion+"\r\n")
			// The real version of a Valkey server is only in valkey_version.
			assert.Equal(t, img.Server == "valkey", strings.Contains(info, "valkey_version:"+img.Version+"\r\n"))

			hello, err := c.Do(ctx, c.B().Hello().Protover(3).Build()).AsMap()
			require.NoError(t, err)
			server, version := hello["server"], hello["version"]
			assert.Equal(t, w.hello, must(server.ToString()))
			assert.Equal(t, img.Version, must(version.ToString()), "HELLO reports the real version")

			lua, err := c.Do(ctx, c.B().Eval().Script("return redis.REDIS_VERSION").Numkeys(0).Build()).ToString()
			require.NoError(t, err)
			assert.Equal(t, w.luaVersion, lua)
			typ, err := c.Do(ctx, c.B().Eval().Script("return type(rawget(_G, 'server'))").Numkeys(0).Build()).ToString()
			require.NoError(t, err)
			assert.Equal(t, w.serverTable, typ == "table", "the server table in Lua")

			line, err := c.Do(ctx, c.B().ClientInfo().Build()).ToString()
			require.NoError(t, err)
			var fields []string
			for _, kv := range strings.Fields(line) {
				name, _, _ := strings.Cut(kv, "=")
				fields = append(fields, name)
			}
			for _, f := range newSince70 {
				assert.Equal(t, slices.Contains(w.clientInfo, f), slices.Contains(fields, f), "CLIENT INFO field %s", f)
			}
			for _, f := range []string{"addr", "laddr", "flags", "cmd", "user", "resp", "ssub"} {
				assert.Contains(t, fields, f, "CLIENT INFO field the harness reads")
			}

			// What the lock scripts need answers alike everywhere.
			n, err := c.Do(ctx, c.B().Eval().Script("return redis.call('SPUBLISH', KEYS[1], '0') + redis.call('PUBLISH', KEYS[1], '0')").Numkeys(1).Key("{d}:c").Build()).AsInt64()
			require.NoError(t, err)
			assert.Zero(t, n)
			require.NoError(t, c.Do(ctx, c.B().PubsubShardnumsub().Channel("0").Build()).Error())
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
