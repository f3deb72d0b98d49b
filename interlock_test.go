package interlock_test

import (
	"context"
	"github.com/interlock-go/interlock/internal/runtime"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
)

var addr string

func TestMain(m *testing.M) {
	redistest.Main(m, func() (func(), error) {
		s, err := redistest.Start()
		if err != nil {
			return nil, err
		}
		addr = s.Addr()
		return s.Stop, nil
	})
}

func newClient(t *testing.T, opts ...interlock.Option) *interlock.Client {
	t.Helper()
	c, err := interlock.New(redistest.NewClient(t, addr), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestClientID(t *testing.T) {
	a, b := newClient(t), newClient(t)
	uuidV4 := `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`
	assert.Regexp(t, uuidV4, a.ID())
	assert.NotEqual(t, a.ID(), b.ID())
}

func TestOwner(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	mine, err := c.Owner(ctx)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(mine, c.ID()+":"))
	again, err := c.Owner(ctx)
	require.NoError(t, err)
	assert.Equal(t, mine, again, "one goroutine, one owner")

	var theirs string
	var wg sync.WaitGroup
	wg.Go(func() { theirs, _ = c.Owner(ctx) })
	wg.Wait()
	assert.NotEqual(t, mine, theirs, "another goroutine, another owner")

	explicit, err := c.Owner(interlock.WithOwner(ctx, 42))
	require.NoError(t, err)
	assert.Equal(t, c.ID()+":42", explicit)
	wg.Go(func() {
		other, err := c.Owner(interlock.WithOwner(ctx, 42))
		assert.NoError(t, err)
		assert.Equal(t, explicit, other, "the explicit owner crosses goroutines")
	})
	wg.Wait()

	a, b := interlock.NewOwnerID(), interlock.NewOwnerID()
	assert.NotEqual(t, a, b)
	assert.Greater(t, a, int64(1<<62))

	for _, bad := range []int64{0, -1} {
		_, err := c.Owner(interlock.WithOwner(ctx, bad))
		assert.ErrorIs(t, err, interlock.ErrInvalid)
	}
}

func TestOptionsAreValidated(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	for name, opt := range map[string]interlock.Option{
		"watchdog too short": interlock.WithWatchdogTimeout(time.Millisecond),
		"negative watchdog":  interlock.WithWatchdogTimeout(-time.Second),
		"batch size 0":       interlock.WithRenewalBatchSize(0),
		"unknown mode":       interlock.WithPubSubMode(interlock.PubSubMode(9)),
	} {
		_, err := interlock.New(rc, opt)
		assert.ErrorIs(t, err, interlock.ErrInvalid, name)
	}
	_, err := interlock.New(nil)
	assert.ErrorIs(t, err, interlock.ErrInvalid)

	c := newClient(t, interlock.WithWatchdogTimeout(3*time.Second), interlock.WithLogger(slog.New(slog.DiscardHandler)))
	assert.Equal(t, 3*time.Second, runtime.Of(c).Cfg.Watchdog)
	assert.Equal(t, time.Second, runtime.Of(c).Renewal.Interval())
	assert.Equal(t, interlock.DefaultWatchdogTimeout, newClient(t).WatchdogTimeout())
}

func TestPubSubMode(t *testing.T) {
	ctx := context.Background()
	for mode, want := range map[interlock.PubSubMode]string{
		interlock.PubSubAuto:    "PUBLISH", // a standalone server
		interlock.PubSubClassic: "PUBLISH",
		interlock.PubSubSharded: "SPUBLISH",
	} {
		cmd, err := newClient(t, interlock.WithPubSubMode(mode)).PublishCommand(ctx)
		require.NoError(t, err)
		assert.Equal(t, want, cmd, mode)
	}
}

func TestAutoModeOnClusterIsSharded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	cl := redistest.Cluster(t)
	c, err := interlock.New(cl.Client(t))
	require.NoError(t, err)
	defer c.Close()
	sharded, err := runtime.Of(c).Sharded(context.Background())
	require.NoError(t, err)
	assert.True(t, sharded, "Redis 7 cluster: sharded pub/sub, as Redisson chooses")
}

func TestCloseLeavesTheRueidisClientOpen(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	c, err := interlock.New(rc)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.NoError(t, c.Close(), "Close is idempotent")
	assert.True(t, c.Closed())
	assert.NoError(t, rc.Do(context.Background(), rc.B().Ping().Build()).Error())
	// goleak in TestMain checks that Close joined every goroutine.
}

func TestDeleteLater(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	c, err := interlock.New(rc)
	require.NoError(t, err)
	ctx := context.Background()
	var keys []string
	for i := range 50 {
		k := "deletelater:" + t.Name() + ":" + string(rune('a'+i%26)) + strings.Repeat("x", i)
		keys = append(keys, k)
		require.NoError(t, rc.Do(ctx, rc.B().Set().Key(k).Value("1").Build()).Error())
		runtime.Of(c).DeleteLater(k)
	}
	count := func() int64 {
		n, err := rc.Do(ctx, rc.B().Exists().Key(keys...).Build()).AsInt64()
		require.NoError(t, err)
		return n
	}
	require.Eventually(t, func() bool { return count() == 0 }, time.Second, time.Millisecond)

	// Keys queued just before Close are deleted by Close.
	require.NoError(t, rc.Do(ctx, rc.B().Set().Key(keys[0]).Value("1").Build()).Error())
	runtime.Of(c).DeleteLater(keys[0])
	require.NoError(t, c.Close())
	assert.Zero(t, count())
}
