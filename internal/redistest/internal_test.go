package redistest

import (
	"bufio"
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFreePortLeavesRoomForTheBus(t *testing.T) {
	t.Parallel()
	for range 20 {
		port, err := freePort(true)
		require.NoError(t, err)
		assert.LessOrEqual(t, port, 65535-clusterBusOffset)
		assert.Positive(t, port)
	}
}

// A cluster node whose bus port is taken reports errAddrInUse, which makes
// startProcess retry on another port.
func TestSpawnDetectsBusyBusPort(t *testing.T) {
	t.Parallel()
	RequireProcess(t)
	bin, err := lookBinary("redis-server")
	require.NoError(t, err)
	port, err := freePort(true)
	require.NoError(t, err)
	bus, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+clusterBusOffset))
	require.NoError(t, err)
	defer bus.Close()

	s := &Server{bin: bin, dir: t.TempDir(), port: port, cluster: true, addr: "127.0.0.1:" + strconv.Itoa(port)}
	s.mu.Lock()
	err = s.spawn(t.Context())
	s.mu.Unlock()
	require.ErrorIs(t, err, errAddrInUse)
	assert.Contains(t, err.Error(), "last lines of")
	assert.Nil(t, s.proc)
}

func TestReadReply(t *testing.T) {
	t.Parallel()
	in := "*4\r\n:1\r\n$3\r\nabc\r\n-ERR x\r\n*-1\r\n" + "$-1\r\n" + "-WRONGTYPE y\r\n" + "+OK\r\n" + "?\r\n"
	r := bufio.NewReader(strings.NewReader(in))
	v, err := readReply(r)
	require.NoError(t, err)
	assert.Equal(t, []any{int64(1), "abc", respError("ERR x"), nil}, v)
	v, err = readReply(r)
	require.NoError(t, err)
	assert.Nil(t, v)
	_, err = readReply(r)
	assert.Equal(t, respError("WRONGTYPE y"), err)
	v, err = readReply(r)
	require.NoError(t, err)
	assert.Equal(t, "OK", v)
	_, err = readReply(r)
	assert.ErrorIs(t, err, errProtocol)
}

func TestInfoField(t *testing.T) {
	t.Parallel()
	info := "# Server\r\nredis_version:7.0.15\r\nprocess_id:42\r\n"
	v, ok := infoField(info, "process_id")
	assert.True(t, ok)
	assert.Equal(t, "42", v)
	_, ok = infoField(info, "missing")
	assert.False(t, ok)
}

func TestProbeRejectsAnotherServer(t *testing.T) {
	t.Parallel()
	RequireProcess(t)
	other := Standalone(t)
	s := &Server{addr: other.addr}
	err := s.probe(context.Background(), os.Getpid())
	assert.ErrorContains(t, err, "not by ours")
}
