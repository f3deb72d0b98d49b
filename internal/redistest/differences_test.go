package redistest_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/redisproc"
	"github.com/interlock-go/interlock/internal/redistest"
)

// TestServerDifferences pins what the servers of the matrix answer
// differently, where interlock or its tools read it (docs/compatibility.md,
// "Servers"). Everything the lock scripts use (EVALSHA, hashes, PUBLISH from
// a script, WAIT) answers alike; sharded pub/sub (SPUBLISH, PUBSUB
// SHARDNUMSUB), ZMSCORE, EXPIRETIME and WAITAOF are where the older servers
// differ.
func TestServerDifferences(t *testing.T) {
	type want struct {
		infoVersion string   // INFO server's redis_version
		modeField   string   // INFO server's field saying standalone, cluster or sentinel
		hello       string   // HELLO 3's server field
		modules     []string // HELLO 3's modules, by name
		luaVersion  string   // redis.REDIS_VERSION inside a script ("" where there is none)
		serverTable bool     // Lua has the global table server (Valkey's alias of redis)
		clientList  []string // CLIENT LIST fields that Redis 6.0 does not have
		missing     []string // the probed commands that the server does not know
		// clusterDatabases: in cluster mode SELECT 0 is allowed and
		// cluster-databases is a setting (Valkey 9's numbered databases).
		clusterDatabases bool
	}
	before62 := []string{"ZMSCORE", "GETEX", "CLIENT INFO"}
	before70 := []string{"SPUBLISH", "PUBSUB SHARDNUMSUB", "PUBSUB SHARDCHANNELS", "EXPIRETIME", "CLIENT NO-EVICT",
		"CLUSTER ADDSLOTSRANGE", "CLUSTER SHARDS"}
	before72 := []string{"WAITAOF", "CLIENT SETINFO"}
	valkey9 := []string{"CLUSTER GETSLOTMIGRATIONS"}
	since70 := []string{"laddr", "resp", "ssub"}
	since72 := slices.Concat(since70, []string{"watch", "lib-name", "lib-ver"})
	wants := map[string]want{
		redistest.Redis60.Name(): {infoVersion: "6.0.16", modeField: "redis_mode", hello: "redis",
			missing: slices.Concat(before62, before70, before72, valkey9)},
		redistest.Redis62.Name(): {infoVersion: "6.2.14", modeField: "redis_mode", hello: "redis",
			clientList: []string{"laddr"}, missing: slices.Concat(before70, before72, valkey9)},
		redistest.Redis7.Name(): {infoVersion: "7.0.15", modeField: "redis_mode", hello: "redis", luaVersion: "7.0.15",
			clientList: since70, missing: slices.Concat(before72, valkey9)},
		redistest.Redis74.Name(): {infoVersion: "7.4.1", modeField: "redis_mode", hello: "redis", luaVersion: "7.4.1",
			clientList: since72, missing: valkey9},
		redistest.Redis8.Name(): {infoVersion: "8.0.2", modeField: "redis_mode", hello: "redis", modules: []string{"vectorset"},
			luaVersion: "8.0.2", clientList: slices.Concat(since72, []string{"io-thread"}), missing: valkey9},
		redistest.Valkey8.Name(): {infoVersion: "7.2.4", modeField: "server_mode", hello: "valkey", luaVersion: "7.2.4",
			serverTable: true, clientList: slices.Concat(since72, []string{"capa", "tot-net-in", "tot-net-out", "tot-cmds"}),
			missing: valkey9},
		redistest.Valkey9.Name(): {infoVersion: "7.2.4", modeField: "server_mode", hello: "valkey", modules: []string{"lua"},
			luaVersion: "7.2.4", serverTable: true,
			clientList:       slices.Concat(since72, []string{"capa", "tot-net-in", "tot-net-out", "tot-cmds"}),
			clusterDatabases: true},
	}
	newSince60 := []string{"laddr", "resp", "ssub", "watch", "lib-name", "lib-ver", "io-thread", "capa", "tot-net-in", "tot-net-out", "tot-cmds"}
	// Each probe is valid where the command exists, so that "unknown"
	// means the server lacks it (Redis 6 answers a wrong arity with
	// "Unknown subcommand" too).
	probes := map[string][]string{
		"ZMSCORE":              {"ZMSCORE", "{d}:z", "a"},
		"GETEX":                {"GETEX", "{d}:k"},
		"CLIENT INFO":          {"CLIENT", "INFO"},
		"SPUBLISH":             {"SPUBLISH", "{d}:c", "0"},
		"PUBSUB SHARDNUMSUB":   {"PUBSUB", "SHARDNUMSUB", "{d}:c"},
		"PUBSUB SHARDCHANNELS": {"PUBSUB", "SHARDCHANNELS"},
		"EXPIRETIME":           {"EXPIRETIME", "{d}:k"},
		"CLIENT NO-EVICT":      {"CLIENT", "NO-EVICT", "off"},
		"WAITAOF":              {"WAITAOF", "0", "0", "1"},
		"CLIENT SETINFO":       {"CLIENT", "SETINFO", "LIB-NAME", "probe"},
	}
	clusterProbes := map[string][]string{
		"CLUSTER ADDSLOTSRANGE":     {"CLUSTER", "ADDSLOTSRANGE", "0", "16383"},
		"CLUSTER SHARDS":            {"CLUSTER", "SHARDS"},
		"CLUSTER GETSLOTMIGRATIONS": {"CLUSTER", "GETSLOTMIGRATIONS"},
	}
	// known sends cmd to addr on a connection of its own and reports
	// whether the server knows it.
	known := func(t *testing.T, addr string, cmd []string) bool {
		_, err := redisproc.Command(t.Context(), addr, cmd...)
		var re redisproc.ReplyError
		if err == nil {
			return true
		}
		require.ErrorAs(t, err, &re, "%q", cmd)
		msg := strings.ToLower(re.Error())
		return !strings.Contains(msg, "unknown command") && !strings.Contains(msg, "unknown subcommand")
	}
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
			// Valkey 8 renamed redis_mode to server_mode.
			assert.Contains(t, info, "\r\n"+w.modeField+":standalone\r\n")
			for _, f := range []string{"redis_mode", "server_mode"} {
				assert.Equal(t, f == w.modeField, strings.Contains(info, "\r\n"+f+":"), "INFO server field %s", f)
			}

			hello, err := c.Do(ctx, c.B().Hello().Protover(3).Build()).AsMap()
			require.NoError(t, err)
			server, version := hello["server"], hello["version"]
			assert.Equal(t, w.hello, must(server.ToString()))
			assert.Equal(t, img.Version, must(version.ToString()), "HELLO reports the real version")
			var modules []string
			mods := hello["modules"]
			for _, m := range must(mods.ToArray()) {
				modules = append(modules, must(m.AsStrMap())["name"])
			}
			assert.Equal(t, w.modules, modules, "HELLO's modules")

			lua, err := c.Do(ctx, c.B().Eval().Script("return redis.REDIS_VERSION").Numkeys(0).Build()).ToString()
			if w.luaVersion == "" {
				assert.Error(t, err, "a nil redis.REDIS_VERSION")
			} else {
				require.NoError(t, err)
				assert.Equal(t, w.luaVersion, lua)
			}
			typ, err := c.Do(ctx, c.B().Eval().Script("return type(rawget(_G, 'server'))").Numkeys(0).Build()).ToString()
			require.NoError(t, err)
			assert.Equal(t, w.serverTable, typ == "table", "the server table in Lua")

			// This connection's line of CLIENT LIST (CLIENT INFO is 6.2+).
			id, err := c.Do(ctx, c.B().ClientId().Build()).AsInt64()
			require.NoError(t, err)
			list, err := c.Do(ctx, c.B().ClientList().Build()).ToString()
			require.NoError(t, err)
			var fields []string
			// RESP3 gives it as a verbatim string: "txt:" comes first.
			for line := range strings.Lines(strings.TrimPrefix(list, "txt:")) {
				if !strings.HasPrefix(line, "id="+strconv.FormatInt(id, 10)+" ") {
					continue
				}
				for _, kv := range strings.Fields(line) {
					name, _, _ := strings.Cut(kv, "=")
					fields = append(fields, name)
				}
			}
			require.NotEmpty(t, fields, "no line of CLIENT LIST has id=%d", id)
			for _, f := range newSince60 {
				assert.Equal(t, slices.Contains(w.clientList, f), slices.Contains(fields, f), "CLIENT LIST field %s", f)
			}
			for _, f := range []string{"addr", "flags", "cmd", "user"} {
				assert.Contains(t, fields, f, "CLIENT LIST field the harness reads")
			}

			// The commands that appeared since Redis 6.0.
			for name, cmd := range probes {
				assert.Equal(t, !slices.Contains(w.missing, name), known(t, srv.Addr(), cmd), "does %s know %s", img.Name(), name)
			}

			// What the lock scripts need answers alike everywhere, but
			// for sharded pub/sub, which a script on 6.x cannot call.
			require.NoError(t, c.Do(ctx, c.B().Eval().Script("return redis.call('PUBLISH', KEYS[1], '0')").Numkeys(1).Key("{d}:c").Build()).Error())
			err = c.Do(ctx, c.B().Eval().Script("return redis.call('SPUBLISH', KEYS[1], '0')").Numkeys(1).Key("{d}:c").Build()).Error()
			if slices.Contains(w.missing, "SPUBLISH") {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "Unknown Redis command called from Lua script")
			} else {
				require.NoError(t, err)
			}

			// Cluster mode, on a node that is in no cluster yet. Valkey 9
			// has numbered databases there, 1 unless cluster-databases
			// says more.
			var args []string
			if w.clusterDatabases {
				args = []string{"--cluster-databases", "16"}
			}
			node := redistest.ClusterNodeContainer(t, img, args...)
			for name, cmd := range clusterProbes {
				assert.Equal(t, !slices.Contains(w.missing, name), known(t, node.Addr(), cmd), "does %s know %s", img.Name(), name)
			}
			_, err = redisproc.Command(ctx, node.Addr(), "SELECT", "1")
			if w.clusterDatabases {
				assert.NoError(t, err, "SELECT 1 in cluster mode")
			} else {
				assert.ErrorContains(t, err, "SELECT is not allowed in cluster mode")
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
