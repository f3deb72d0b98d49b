package security_test

import (
	"context"
	"crypto/tls"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/rlock"
)

// TestTLS runs a lock hand-off between two clients over TLS: one
// configured with a tls.Config, the other parsed from a rediss:// URL.
func TestTLS(t *testing.T) {
	redistest.RequireProcess(t)
	srv := redistest.StandaloneTLS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	a, err := interlock.New(srv.Client(t))
	require.NoError(t, err)
	defer a.Close()

	opt, err := rueidis.ParseURL(srv.URL())
	require.NoError(t, err)
	opt.TLSConfig.RootCAs = srv.RootCAs()
	rc, err := rueidis.NewClient(opt)
	require.NoError(t, err)
	defer rc.Close()
	b, err := interlock.New(rc)
	require.NoError(t, err)
	defer b.Close()

	const name = "tls:handoff"
	require.NoError(t, rlock.New(a, name).Lock(ctx))
	got := make(chan time.Time, 1)
	go func() {
		ok, err := rlock.New(b, name).TryLock(ctx, 10*time.Second, 0)
		assert.NoError(t, err)
		assert.True(t, ok)
		got <- time.Now()
		assert.NoError(t, rlock.New(b, name).Unlock(ctx))
	}()
	time.Sleep(300 * time.Millisecond) // b subscribes and waits
	released := time.Now()
	require.NoError(t, rlock.New(a, name).Unlock(ctx))
	select {
	case at := <-got:
		// The watchdog lease is 30 s: only the release message can have
		// woken b this soon.
		assert.Less(t, at.Sub(released), 2*time.Second)
		t.Logf("hand-off over TLS in %v", at.Sub(released).Round(time.Millisecond))
	case <-ctx.Done():
		t.Fatal("the waiter was not woken over TLS")
	}

	// A client that does not trust the server is refused, and leaves no
	// goroutine behind (TestMain checks with goleak).
	_, err = rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{srv.Addr()},
		TLSConfig:   &tls.Config{ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12},
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "certificate")
}

// TestCLIOverTLS checks that the interlock command accepts a rediss:// URL.
// It trusts the test authority through SSL_CERT_FILE, as any Go program on
// Linux does.
func TestCLIOverTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the interlock command")
	}
	redistest.RequireProcess(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("needs the go command to build cmd/interlock")
	}
	srv := redistest.StandaloneTLS(t)
	bin := filepath.Join(t.TempDir(), "interlock")
	build := exec.Command(goBin, "build", "-o", bin, "github.com/interlock-go/interlock/cmd/interlock")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	run := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(os.Environ(), "SSL_CERT_FILE="+srv.CAFile(), "INTERLOCK_REDIS=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out2, err := run("run", "--redis", srv.URL(), "tls:cli", "--", "sh", "-c", "echo held $INTERLOCK_LOCK")
	require.NoError(t, err, out2)
	assert.Contains(t, out2, "held tls:cli")

	out2, err = run("inspect", "--redis", srv.URL(), "tls:cli")
	require.NoError(t, err, out2)
	assert.True(t, strings.Contains(out2, "tls:cli"), out2)

	// Without the authority the command refuses the server.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "--redis", srv.URL(), "tls:cli", "--", "true")
	cmd.Env = append(os.Environ(), "SSL_CERT_FILE="+filepath.Join(t.TempDir(), "none.pem"), "INTERLOCK_REDIS=")
	out3, err := cmd.CombinedOutput()
	require.Error(t, err, "%s", out3)
	assert.Contains(t, string(out3), "certificate")
}
