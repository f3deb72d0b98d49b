package redisproc

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// requireServer skips t when redis-server is not installed, unless CI is
// true, when it fails. (internal/redistest has the full harness; it cannot
// be used here, since it imports this package.)
func requireServer(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
			t.Fatalf("redis-server not found on PATH: %v", err)
		}
		t.Skipf("redis-server not found on PATH: %v", err)
	}
	return bin
}

func TestStartStop(t *testing.T) {
	t.Parallel()
	requireServer(t)
	s, err := Start(t.Context(), Config{})
	require.NoError(t, err)
	t.Cleanup(s.Stop)
	require.Regexp(t, `^127\.0\.0\.1:\d+$`, s.Addr())
	assert.Equal(t, s.Addr(), "127.0.0.1:"+strconv.Itoa(s.Port()))
	pong, err := CommandString(t.Context(), s.Addr(), "PING")
	require.NoError(t, err)
	assert.Equal(t, "PONG", pong)
	info, err := CommandString(t.Context(), s.Addr(), "CONFIG", "GET", "save")
	assert.Error(t, err, "CONFIG GET answers an array, not a string: %q", info)
	reply, err := Command(t.Context(), s.Addr(), "CONFIG", "GET", "appendonly")
	require.NoError(t, err)
	assert.Equal(t, []any{"appendonly", "no"}, reply)
	assert.DirExists(t, s.Dir())
	assert.FileExists(t, filepath.Join(s.Dir(), LogName))

	s.Stop()
	s.Stop()
	assert.NoDirExists(t, s.Dir())
	_, err = net.DialTimeout("tcp", s.Addr(), time.Second)
	assert.Error(t, err)
	assert.ErrorIs(t, s.Kill(), ErrStopped)
	assert.ErrorIs(t, s.Pause(), ErrStopped)
	assert.ErrorIs(t, s.Restart(t.Context()), ErrStopped)
}

func TestStartWithoutBinary(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Start(t.Context(), Config{})
	assert.ErrorIs(t, err, exec.ErrNotFound)
}

func TestStartupFailureReportsLog(t *testing.T) {
	t.Parallel()
	requireServer(t)
	_, err := Start(t.Context(), Config{Args: []string{"--no-such-directive", "x"}})
	require.Error(t, err)
	assert.ErrorContains(t, err, "FATAL CONFIG FILE ERROR")
	m := regexp.MustCompile(`last lines of (\S+):`).FindStringSubmatch(err.Error())
	require.Len(t, m, 2, "error without log tail: %v", err)
	assert.NoDirExists(t, filepath.Dir(m[1]), "the directory of a failed server is removed")
}

func TestFreePortLeavesRoomForTheBus(t *testing.T) {
	t.Parallel()
	for range 20 {
		port, err := FreePort(true)
		require.NoError(t, err)
		assert.LessOrEqual(t, port, 65535-ClusterBusOffset)
		assert.Positive(t, port)
	}
}

// A cluster node whose bus port is taken reports ErrAddrInUse, which makes
// Start retry on another port.
func TestSpawnDetectsBusyBusPort(t *testing.T) {
	t.Parallel()
	bin := requireServer(t)
	// Another test process may take the bus port between FreePort and the
	// Listen: take another one then.
	var (
		port int
		bus  net.Listener
		err  error
	)
	for range 20 {
		port, err = FreePort(true)
		require.NoError(t, err)
		if bus, err = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+ClusterBusOffset)); err == nil {
			break
		}
	}
	require.NoError(t, err)
	defer bus.Close()

	s := &Server{bin: bin, dir: t.TempDir(), port: port, cluster: true, addr: "127.0.0.1:" + strconv.Itoa(port)}
	s.mu.Lock()
	err = s.spawn(t.Context())
	s.mu.Unlock()
	require.ErrorIs(t, err, ErrAddrInUse)
	assert.Contains(t, err.Error(), "last lines of")
	assert.Nil(t, s.proc)
}

func TestReadReply(t *testing.T) {
	t.Parallel()
	in := "*4\r\n:1\r\n$3\r\nabc\r\n-ERR x\r\n*-1\r\n" + "$-1\r\n" + "-WRONGTYPE y\r\n" + "+OK\r\n" + "?\r\n"
	r := bufio.NewReader(strings.NewReader(in))
	v, err := ReadReply(r)
	require.NoError(t, err)
	assert.Equal(t, []any{int64(1), "abc", ReplyError("ERR x"), nil}, v)
	v, err = ReadReply(r)
	require.NoError(t, err)
	assert.Nil(t, v)
	_, err = ReadReply(r)
	assert.Equal(t, ReplyError("WRONGTYPE y"), err)
	v, err = ReadReply(r)
	require.NoError(t, err)
	assert.Equal(t, "OK", v)
	_, err = ReadReply(r)
	assert.ErrorIs(t, err, ErrProtocol)
}

func TestInfoField(t *testing.T) {
	t.Parallel()
	info := "# Server\r\nredis_version:7.0.15\r\nprocess_id:42\r\n"
	v, ok := InfoField(info, "process_id")
	assert.True(t, ok)
	assert.Equal(t, "42", v)
	_, ok = InfoField(info, "missing")
	assert.False(t, ok)
}

func TestProbeRejectsAnotherServer(t *testing.T) {
	t.Parallel()
	requireServer(t)
	other, err := Start(t.Context(), Config{})
	require.NoError(t, err)
	t.Cleanup(other.Stop)
	s := &Server{addr: other.Addr()}
	err = s.probe(context.Background(), os.Getpid())
	assert.ErrorContains(t, err, "not by ours")
}
