package redistest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/redistest"
)

// The tests of the container backend. Each runs the whole server matrix in
// parallel subtests; the top-level tests are sequential, so that
// TestContainerLeavesNothing sees only its own containers come and go.

var loopbackAddr = regexp.MustCompile(`^127\.0\.0\.1:\d+$`)

// pingSetGet checks that c answers PING and stores and returns a value.
func pingSetGet(t *testing.T, c rueidis.Client, key string) {
	t.Helper()
	ctx := t.Context()
	pong, err := c.Do(ctx, c.B().Ping().Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "PONG", pong)
	require.NoError(t, c.Do(ctx, c.B().Set().Key(key).Value("v:"+key).Build()).Error())
	got, err := c.Do(ctx, c.B().Get().Key(key).Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "v:"+key, got)
}

func TestContainerStandalone(t *testing.T) {
	for _, img := range redistest.Images() {
		t.Run(img.Name(), func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			srv := redistest.StartContainer(t, img)
			t.Logf("ready in %v", time.Since(start).Round(time.Millisecond))
			require.Regexp(t, loopbackAddr, srv.Addr())
			assertLoopbackOnly(t, mustAtoi(t, portOf(t, srv.Addr())))
			ctr := srv.Container()
			require.NotNil(t, ctr)
			assert.Equal(t, img, ctr.Image())
			assert.Equal(t, img.Version, ctr.Version())
			pingSetGet(t, srv.Client(t), "standalone")

			// The image's cli runs in the container, on the host network.
			out, err := ctr.Exec(t.Context(), "/usr/bin/"+img.Server+"-cli", "-p", portOf(t, srv.Addr()), "GET", "standalone")
			require.NoError(t, err)
			assert.Equal(t, "v:standalone", strings.TrimSpace(out))
		})
	}
}

// portOf returns the port of a host:port address.
func portOf(t *testing.T, addr string) string {
	t.Helper()
	_, port, ok := strings.Cut(addr, ":")
	require.True(t, ok, addr)
	return port
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// assertLoopbackOnly checks, from the kernel's socket tables (the containers
// share the host's network namespace), that something listens on port and
// only on 127.0.0.1.
func assertLoopbackOnly(t *testing.T, port int) {
	t.Helper()
	var local []string
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		require.NoError(t, err)
		for line := range strings.Lines(string(b)) {
			f := strings.Fields(line)
			// sl local_address rem_address st ...; st 0A is LISTEN.
			if len(f) < 4 || f[3] != "0A" {
				continue
			}
			addr, hexPort, _ := strings.Cut(f[1], ":")
			if p, err := strconv.ParseUint(hexPort, 16, 16); err == nil && int(p) == port {
				local = append(local, addr)
			}
		}
	}
	assert.Equal(t, []string{"0100007F"}, local, "listeners on port %d (hex addresses; 0100007F is 127.0.0.1)", port)
}

func TestContainerCluster(t *testing.T) {
	for _, img := range redistest.Images() {
		t.Run(img.Name(), func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			cl := redistest.ContainerCluster(t, img)
			t.Logf("cluster ready in %v", time.Since(start).Round(time.Millisecond))
			require.Len(t, cl.Nodes(), 3)
			for _, n := range cl.Nodes() {
				require.Regexp(t, loopbackAddr, n.Addr())
				port := mustAtoi(t, portOf(t, n.Addr()))
				assertLoopbackOnly(t, port)
				assertLoopbackOnly(t, port+10000) // the cluster bus
				require.NotNil(t, n.Container())
				assert.Equal(t, img.Version, n.Container().Version())
			}

			c := cl.Client(t) // a rueidis cluster client
			assert.Len(t, c.Nodes(), 3, "rueidis sees three masters")
			// One key on each master, through the routing client, then
			// read back from the owning node alone.
			owners := map[*redistest.Server]string{}
			for i := 0; len(owners) < 3; i++ {
				key := fmt.Sprintf("k%d", i)
				if n := cl.NodeForKey(key); owners[n] == "" {
					owners[n] = key
				}
			}
			for n, key := range owners {
				pingSetGet(t, c, key)
				nc := n.Client(t)
				got, err := nc.Do(t.Context(), nc.B().Get().Key(key).Build()).ToString()
				require.NoError(t, err, "on %s", n.Addr())
				assert.Equal(t, "v:"+key, got)
			}
		})
	}
}

func TestContainerFaults(t *testing.T) {
	for _, img := range redistest.Images() {
		t.Run(img.Name(), func(t *testing.T) {
			t.Parallel()
			srv := redistest.StartContainer(t, img)
			ctx := t.Context()
			c := srv.Client(t)
			require.NoError(t, c.Do(ctx, c.B().Set().Key("k").Value("v").Build().Pin()).Error())

			// Pause: connections stay open, nothing answers until Resume.
			start := time.Now()
			require.NoError(t, srv.Pause())
			t.Logf("paused in %v", time.Since(start).Round(time.Millisecond))
			require.NoError(t, srv.Pause(), "pausing twice does nothing")
			pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			err := c.Do(pctx, c.B().Get().Key("k").Build().Pin()).Error()
			cancel()
			require.ErrorIs(t, err, context.DeadlineExceeded)
			require.NoError(t, srv.Resume())
			got, err := c.Do(ctx, c.B().Get().Key("k").Build().Pin()).ToString()
			require.NoError(t, err)
			assert.Equal(t, "v", got)

			// Kill, then Restart on the same port: the server comes back
			// empty, and the same client reconnects.
			start = time.Now()
			require.NoError(t, srv.Kill())
			t.Logf("killed in %v", time.Since(start).Round(time.Millisecond))
			require.NoError(t, srv.Kill(), "killing a dead server does nothing")
			kctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			err = c.Do(kctx, c.B().Ping().Build()).Error()
			cancel()
			require.Error(t, err)
			start = time.Now()
			require.NoError(t, srv.Restart(ctx))
			t.Logf("restarted in %v", time.Since(start).Round(time.Millisecond))
			err = c.Do(ctx, c.B().Get().Key("k").Build().Pin()).Error()
			require.True(t, rueidis.IsRedisNil(err), "want an empty server, got %v", err)

			// A paused server is removed by Stop all the same.
			require.NoError(t, srv.Pause())
		})
	}
}

func TestContainerReplicated(t *testing.T) {
	for _, img := range redistest.Images() {
		t.Run(img.Name(), func(t *testing.T) {
			t.Parallel()
			r := redistest.ContainerReplicas(t, img, 1)
			ctx := t.Context()
			mc := r.Master().Client(t)
			// WAIT on the writing connection, as the package doc says.
			replies := mc.DoMulti(ctx,
				mc.B().Set().Key("k").Value("v").Build(),
				mc.B().Wait().Numreplicas(1).Timeout(5000).Build())
			require.NoError(t, replies[0].Error())
			acked, err := replies[1].AsInt64()
			require.NoError(t, err)
			require.EqualValues(t, 1, acked)
			rc := r.Replicas()[0].Client(t)
			got, err := rc.Do(ctx, rc.B().Get().Key("k").Build().Pin()).ToString()
			require.NoError(t, err)
			assert.Equal(t, "v", got)

			// PauseReplication freezes the replica's container and cuts its
			// link: a write made then never reaches it if the master dies
			// before the replica resumes.
			require.NoError(t, r.PauseReplication(0))
			require.NoError(t, mc.Do(ctx, mc.B().Set().Key("k").Value("w").Build().Pin()).Error())
			require.NoError(t, r.Master().Kill())
			require.NoError(t, r.ResumeReplication(0))
			require.NoError(t, r.Promote(ctx, 0))
			got, err = rc.Do(ctx, rc.B().Get().Key("k").Build().Pin()).ToString()
			require.NoError(t, err)
			assert.Equal(t, "v", got, "the promoted replica missed the write made while it was cut off")
		})
	}
}

func TestContainerMissingImage(t *testing.T) {
	start := time.Now()
	_, err := redistest.StartContainerServer(redistest.Image{Ref: "interlock-test/absent:0", Server: "redis", Version: "0"})
	if err != nil && strings.Contains(err.Error(), "no Docker engine") {
		redistest.SkipOrFail(t, err)
	}
	require.ErrorIs(t, err, redistest.ErrUnavailable)
	assert.Contains(t, err.Error(), "scripts/build-images")
	assert.Less(t, time.Since(start), 2*time.Second, "a missing image fails at once, without a pull")
}

// TestContainerLeavesNothing starts a server and a cluster in a subtest and
// checks, after their cleanup ran, that none of their containers is left and
// that Docker has no network but host and none, nor the host any bridge.
func TestContainerLeavesNothing(t *testing.T) {
	var ids []string
	t.Run("start", func(t *testing.T) {
		srv := redistest.StartContainer(t, redistest.Redis7)
		ids = append(ids, srv.Container().ID())
		for _, n := range redistest.ContainerCluster(t, redistest.Valkey8).Nodes() {
			ids = append(ids, n.Container().ID())
		}
	})
	if len(ids) == 0 {
		t.Skip("the subtest started no container")
	}
	require.Len(t, ids, 4)
	// The docker CLI, so that the test needs no Docker client library.
	left, err := exec.CommandContext(t.Context(), "docker", "ps", "-aq", "--no-trunc").Output()
	require.NoError(t, err, "docker ps")
	for _, id := range strings.Fields(string(left)) {
		assert.NotContains(t, ids, id, "container %s is left", id)
	}

	nets, err := exec.CommandContext(t.Context(), "docker", "network", "ls", "--format", "{{.Name}}").Output()
	require.NoError(t, err, "docker network ls")
	names := strings.Fields(string(nets))
	slices.Sort(names)
	assert.Equal(t, []string{"host", "none"}, names, "docker network ls")

	// A bridge interface has a bridge directory in sysfs.
	bridges, err := filepath.Glob("/sys/class/net/*/bridge")
	require.NoError(t, err)
	assert.Empty(t, bridges, "bridge interfaces on the host")
}
