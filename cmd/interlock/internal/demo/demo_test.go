//go:build unix

package demo

import (
	"bufio"
	"context"
	"io"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/clitest"
	"github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"
	"github.com/interlock-go/interlock/internal/redisproc"
)

// demoBudget is how long the whole demo may take.
const demoBudget = 30 * time.Second

// The demo tells its four scenes against the shared server, within its
// time budget, and leaves no key behind; its --chart is their timeline.
// Not parallel: its timings are the point, so it runs alone.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo takes about 10s")
	}
	chart := filepath.Join(t.TempDir(), "demo.svg")
	res := clitest.RunBinary(t, "", "demo", "--redis", clitest.RedisURL(), "--chart", chart)
	t.Logf("demo took %v; its output:\n%s", res.Took, res.Stdout)
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Empty(t, res.Stderr)
	assert.Less(t, res.Took, demoBudget)
	for _, want := range []string{
		"=> DOUBLE PROCESSING: order-42 was processed twice",
		"=> SAFE:",
		"=> NO DEADLOCK:",
		"=> C STOPPED IN TIME:",
		"fenced lock",
		"All four scenes ran as told",
		"Wrote the timeline of the scenes to " + chart,
	} {
		assert.Contains(t, res.Stdout, want)
	}
	// Scene 4: the paused holder's write carries an older token than B's,
	// and the fence rejects it.
	rejected := regexp.MustCompile(`C  the fence REJECTS token (\d+): it has admitted token (\d+) \(B's\)`)
	if m := rejected.FindStringSubmatch(res.Stdout); assert.NotNil(t, m, "the fence rejects C's write") {
		stale, err := strconv.ParseUint(m[1], 10, 64)
		require.NoError(t, err)
		newer, err := strconv.ParseUint(m[2], 10, 64)
		require.NoError(t, err)
		assert.Less(t, stale, newer, "C's token is older than B's")
	}
	assert.Regexp(t, `B  locked order-42 with token \d+`, res.Stdout)
	assert.Empty(t, demoKeys(t), "the demo deletes its keys")
	checkDemoChart(t, chart, res.Stdout)
}

// Ctrl-C in the middle of a scene ends the demo with 130, after it killed
// its holder process and deleted its keys.
func TestDemoInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo takes a few seconds to reach scene 3")
	}
	cmd := clitest.Command("demo", "--redis", clitest.RedisURL())
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr clitest.SyncBuffer
	cmd.Stderr = &stderr
	clitest.Start(t, cmd)
	holderLine := regexp.MustCompile(`C  \(pid (\d+)\) locked`)
	pid := 0
	var out strings.Builder
	for sc := bufio.NewScanner(stdout); pid == 0 && sc.Scan(); {
		out.WriteString(sc.Text() + "\n")
		if m := holderLine.FindStringSubmatch(sc.Text()); m != nil {
			pid, err = strconv.Atoi(m[1])
			require.NoError(t, err)
		}
	}
	require.NotZero(t, pid, "the demo reached scene 3; stderr: %s", stderr.String())

	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	start := time.Now()
	// Read the rest of its output until it exits, then reap it.
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(&out, stdout)
	}()
	timer := time.NewTimer(time.Minute)
	defer timer.Stop()
	select {
	case <-copied:
	case <-timer.C:
		t.Fatal("the demo did not exit after SIGINT")
	}
	err = cmd.Wait()
	took := time.Since(start)
	t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), stderr.String())
	assert.Less(t, took, 5*time.Second)
	require.Error(t, err)
	assert.Equal(t, 128+int(syscall.SIGINT), cmd.ProcessState.ExitCode())
	assert.Contains(t, stderr.String(), "interlock: demo: interrupted by interrupt")
	assert.True(t, clitest.Dead(pid), "the holder process is gone")
	assert.Empty(t, demoKeys(t), "the demo deletes its keys")
}

// Without --redis and with nothing on 127.0.0.1:6379, the demo starts a
// throwaway redis-server and removes it afterwards.
func TestDemoRedisThrowaway(t *testing.T) {
	t.Parallel()
	noEnv := cli.Stdio{Getenv: func(string) string { return "" }}
	flags := &redisconn.Flag{URLs: []string{redisconn.DefaultURL}}
	s, err := demoRedis(t.Context(), noEnv, flags)
	require.NoError(t, err)
	defer s.stop()
	ctx := t.Context()
	if _, err := redisproc.CommandString(ctx, defaultRedisAddr, "PING"); err == nil {
		assert.Nil(t, s.srv, "a Redis answers on %s: the demo uses it", defaultRedisAddr)
		assert.Equal(t, []string{redisconn.DefaultURL}, s.urls)
		return
	}
	require.NotNil(t, s.srv)
	assert.Equal(t, []string{"redis://" + s.srv.Addr()}, s.urls)
	pong, err := redisproc.CommandString(ctx, s.srv.Addr(), "PING")
	require.NoError(t, err)
	assert.Equal(t, "PONG", pong)
	dir := s.srv.Dir()
	assert.DirExists(t, dir)
	s.stop()
	assert.NoDirExists(t, dir, "the throwaway server's directory is removed")
	_, err = redisproc.CommandString(ctx, s.srv.Addr(), "PING")
	assert.Error(t, err, "the throwaway server is gone")

	// --redis (or INTERLOCK_REDIS) is used as given.
	flags = &redisconn.Flag{URLs: []string{"redis://elsewhere:1"}, Given: true}
	s, err = demoRedis(ctx, noEnv, flags)
	require.NoError(t, err)
	assert.Nil(t, s.srv)
	assert.Equal(t, []string{"redis://elsewhere:1"}, s.urls)
}

// demoKeys returns the keys the demo left on the shared server.
func demoKeys(t *testing.T) []string {
	t.Helper()
	_, rc := clitest.NewLockClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var found []string
	for cursor := uint64(0); ; {
		e, err := rc.Do(ctx, rc.B().Scan().Cursor(cursor).Match("*interlock-demo:*").Count(1000).Build()).AsScanEntry()
		require.NoError(t, err)
		found = append(found, e.Elements...)
		if cursor = e.Cursor; cursor == 0 {
			return found
		}
	}
}
