package redistest_test

import (
	"crypto/tls"
	"net"
	"os"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/redistest"
)

func TestTLSServer(t *testing.T) {
	t.Parallel()
	redistest.RequireProcess(t)
	srv := redistest.StandaloneTLS(t)
	ctx := t.Context()

	// The helper's client verifies the server against the test CA.
	c := srv.Client(t)
	pong, err := c.Do(ctx, c.B().Ping().Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "PONG", pong)

	// So does a client made from the rediss:// URL, given the CA.
	opt, err := rueidis.ParseURL(srv.URL())
	require.NoError(t, err)
	require.NotNil(t, opt.TLSConfig, "rediss:// turns TLS on")
	opt.TLSConfig.RootCAs = srv.RootCAs()
	opt.ForceSingleClient = true
	uc, err := rueidis.NewClient(opt)
	require.NoError(t, err)
	t.Cleanup(uc.Close)
	require.NoError(t, uc.Do(ctx, uc.B().Set().Key("k").Value("v").Build()).Error())
	v, err := c.Do(ctx, c.B().Get().Key("k").Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "v", v)

	// The CA file is there for other processes.
	pemBytes, err := os.ReadFile(srv.CAFile())
	require.NoError(t, err)
	assert.Contains(t, string(pemBytes), "BEGIN CERTIFICATE")

	// Without the CA the server's certificate is refused.
	_, err = rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{srv.Addr()}, ForceSingleClient: true,
		TLSConfig: &tls.Config{ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12},
	})
	require.Error(t, err, "an unknown authority must be refused")

	// Plain text gets no answer on the TLS port.
	conn, err := net.DialTimeout("tcp", srv.Addr(), time.Second)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(2*time.Second)))
	_, err = conn.Write([]byte("PING\r\n"))
	require.NoError(t, err)
	buf := make([]byte, 16)
	n, _ := conn.Read(buf)
	assert.NotContains(t, string(buf[:n]), "PONG")

	srv.Stop()
	srv.Stop()
	_, err = os.Stat(srv.CAFile())
	assert.True(t, os.IsNotExist(err), "Stop removes the certificates")
}
