package security_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/rlock"
)

// syncBuffer is a bytes.Buffer for a slog handler written from several
// goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLogsAndErrorsHideSecrets runs acquisitions, renewal failures and lost
// locks against a password-protected Redis with a debug-level JSON logger,
// and checks that neither the logs nor the errors returned to callers show
// the password, the client id or an owner id; the logs name locks.
func TestLogsAndErrorsHideSecrets(t *testing.T) {
	redistest.RequireProcess(t)
	const password = "pa55-Wörd-7f3c1e"
	srv := redistest.Standalone(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// The harness probes readiness without a password: set it afterwards.
	setup := srv.Client(t)
	require.NoError(t, setup.Do(ctx, setup.B().ConfigSet().ParameterValue().ParameterValue("requirepass", password).Build()).Error())

	var errs []error // every error a caller saw
	seen := func(err error) error {
		if err != nil {
			errs = append(errs, err)
		}
		return err
	}

	// A wrong password is refused without being echoed.
	_, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, Password: password + "-wrong"})
	require.Error(t, seen(err))
	_, err = rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}})
	require.Error(t, seen(err))

	newRC := func() rueidis.Client {
		rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, Password: password, ForceSingleClient: true})
		require.NoError(t, err)
		t.Cleanup(rc.Close)
		return rc
	}
	admin := newRC()
	var logs syncBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// A watchdog timeout of 1s: the holds below last, however late a
	// loaded machine runs their renewals, until the test ends them.
	c, err := interlock.New(newRC(), interlock.WithLogger(logger), interlock.WithWatchdogTimeout(time.Second))
	require.NoError(t, err)
	defer c.Close()
	other, err := interlock.New(newRC())
	require.NoError(t, err)
	defer other.Close()
	var owners []string
	owner := func(c *interlock.Client, ctx context.Context) {
		o, err := c.Owner(ctx)
		require.NoError(t, err)
		owners = append(owners, o)
	}
	owner(c, ctx)
	owner(other, ctx)

	// 1. A normal hold, a busy try and an unlock of a lock not held.
	m := rlock.New(c, "logs:plain")
	require.NoError(t, seen(m.Lock(ctx)))
	ok, err := rlock.New(other, "logs:plain").TryLock(ctx, 50*time.Millisecond, 0)
	require.NoError(t, seen(err))
	require.False(t, ok)
	require.ErrorIs(t, seen(rlock.New(other, "logs:plain").Unlock(ctx)), interlock.ErrNotHeld)
	require.NoError(t, seen(m.Unlock(ctx)))

	// 2. A lost lock: the key disappears under a watchdog hold.
	lost := rlock.New(c, "logs:lost")
	require.NoError(t, seen(lost.Lock(ctx)))
	guard := lost.Guard(ctx)
	require.NoError(t, admin.Do(ctx, admin.B().Del().Key("logs:lost").Build()).Error())
	select {
	case <-guard.Done():
	case <-ctx.Done():
		t.Fatal("the lost lock was not noticed")
	}
	require.ErrorIs(t, seen(context.Cause(guard)), interlock.ErrLockLost)
	require.Error(t, seen(lost.Unlock(ctx)))

	// 3. Renewal fails (the user may no longer run scripts) until the
	// lease passes and the hold is lost; acquisitions fail meanwhile.
	failing := rlock.New(c, "logs:renewal")
	require.NoError(t, seen(failing.Lock(ctx)))
	guard = failing.Guard(ctx)
	acl := func(rules ...string) {
		args := append([]string{"default"}, rules...)
		require.NoError(t, admin.Do(ctx, admin.B().Arbitrary("ACL", "SETUSER").Args(args...).Build()).Error())
	}
	acl("-evalsha", "-eval")
	_, err = rlock.New(c, "logs:denied").TryLock(ctx, 0, 0)
	require.Error(t, seen(err))
	select {
	case <-guard.Done():
	case <-ctx.Done():
		t.Fatal("the unrenewable lock was not lost")
	}
	require.Error(t, seen(context.Cause(guard)))
	// The guard ends when the Client's last confirmed lease has run out;
	// the server's copy of the TTL started a moment later (when the
	// renewal ran), so wait for the key to be gone before unlocking.
	require.Eventually(t, func() bool {
		n, err := admin.Do(ctx, admin.B().Exists().Key("logs:renewal").Build()).AsInt64()
		return err == nil && n == 0
	}, 2*time.Second, 5*time.Millisecond, "the unrenewed key outlived its lease")
	acl("+@all")
	require.Error(t, seen(failing.Unlock(ctx)))

	// 4. An acquisition against a stopped server.
	srv.Stop()
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = rlock.New(c, "logs:down").TryLock(short, 0, 0)
	cancelShort()
	require.Error(t, seen(err))

	require.NoError(t, c.Close())
	out := logs.String()
	t.Logf("logs:\n%s", out)
	t.Logf("%d errors returned to callers, for example: %v", len(errs), errors.Join(errs[:3]...))

	// What is logged: valid JSON lines naming locks, at Warn and Error.
	var levels []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		levels = append(levels, rec["level"].(string))
	}
	assert.Contains(t, levels, "WARN", "renewal failures are logged")
	assert.Contains(t, levels, "ERROR", "lost locks are logged")
	assert.NotContains(t, levels, "DEBUG", "nothing is logged per acquisition")
	assert.NotContains(t, levels, "INFO", "nothing is logged per acquisition")
	assert.Contains(t, out, `"lock":"logs:lost"`)
	assert.Contains(t, out, `"lock":"logs:renewal"`)

	// What is never shown.
	secrets := map[string]string{"password": password, "client id": c.ID(), "other client id": other.ID()}
	for i, o := range owners {
		secrets["owner "+string(rune('A'+i))] = o
	}
	for what, secret := range secrets {
		assert.NotContains(t, out, secret, "the logs show the %s", what)
		for _, err := range errs {
			assert.NotContains(t, err.Error(), secret, "an error shows the %s", what)
		}
	}
}
