package interlock_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/renewal"
	"github.com/interlock-go/interlock/internal/runtime"
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
		"nil backoff":        interlock.WithResubscribeBackoff(nil),
	} {
		c, err := interlock.New(rc, opt)
		assert.ErrorIs(t, err, interlock.ErrInvalid, name)
		assertClientErr(t, err, interlock.OpNew)
		assert.Nil(t, c, name)
	}
	_, err := interlock.New(nil)
	assert.ErrorIs(t, err, interlock.ErrInvalid)
	assertClientErr(t, err, interlock.OpNew)
	_, err = interlock.OwnerID(interlock.WithOwner(t.Context(), -1))
	assert.ErrorIs(t, err, interlock.ErrInvalid)
	assertClientErr(t, err, interlock.OpOwner)

	newClient(t, interlock.WithWatchdogTimeout(3*time.Second), interlock.WithLogger(slog.New(slog.DiscardHandler)),
		interlock.WithResubscribeBackoff(func(int) time.Duration { return 10 * time.Millisecond }))
}

func TestCloseLeavesTheRueidisClientOpen(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	c, err := interlock.New(rc)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.NoError(t, c.Close(), "Close is idempotent")
	assert.True(t, runtime.Of(c).Closed())
	assert.NoError(t, rc.Do(context.Background(), rc.B().Ping().Build()).Error())
	// goleak in TestMain checks that Close joined every goroutine.
}

// TestStats counts what the Client keeps: a hold the renewal scheduler
// records, a channel a waiter subscribes to, a clean-up step still pending.
func TestStats(t *testing.T) {
	c := newClient(t)
	rt := runtime.Of(c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	assert.Equal(t, interlock.Stats{}, c.Stats())

	task := &renewal.Task{Lost: interlock.ErrLockLost}
	require.NoError(t, rt.Renewal.Hold("stats:lock", "o", task, time.Minute, time.Now()))
	require.NoError(t, rt.Renewal.Hold("stats:lock", "o", task, time.Minute, time.Now()))
	require.NoError(t, rt.Renewal.Hold("stats:other", "o", task, time.Minute, time.Now()))
	assert.Equal(t, interlock.Stats{Holds: 2}, c.Stats(), "one per lock and owner, however many re-entries")

	sub, err := rt.Hub.Subscribe(ctx, "stats:channel", false)
	require.NoError(t, err)
	assert.Equal(t, interlock.Stats{Holds: 2, Channels: 1}, c.Stats())

	release := make(chan struct{})
	rt.Cleanup("stats:lock", "o", time.Now().Add(time.Minute), func(ctx context.Context) error {
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	assert.Equal(t, interlock.Stats{Holds: 2, Channels: 1, UndoQueue: 1}, c.Stats())

	close(release)
	require.NoError(t, rt.Settle(ctx, "stats:lock", "o"))
	sub.Close()
	rt.Renewal.Drop("stats:lock")
	assert.Equal(t, interlock.Stats{Holds: 1}, c.Stats())
	_, held, end := rt.Renewal.Release("stats:other", "o")
	require.True(t, held)
	end(renewal.Released)
	assert.Equal(t, interlock.Stats{}, c.Stats())
}

func TestClockSkew(t *testing.T) {
	skew, err := newClient(t).ClockSkew(context.Background())
	require.NoError(t, err)
	// The server runs on this machine, on the same clock.
	assert.Less(t, skew.Abs(), time.Second, "skew %v", skew)
}

// pubsubErrors is an Observer that passes on pub/sub failures.
type pubsubErrors chan error

func (o pubsubErrors) Observe(_ context.Context, e interlock.Event) {
	if e.Op != interlock.OpPubSub || e.Outcome != interlock.OutcomeError {
		return
	}
	select {
	case o <- e.Err:
	default:
	}
}

// TestPubSubFailuresAreReported breaks the subscription connections of
// two Clients and checks that the Observer and the logger each hear of it.
func TestPubSubFailuresAreReported(t *testing.T) {
	srv := redistest.Standalone(t)
	admin := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	observed := make(pubsubErrors, 1)
	var logs syncBuffer
	for _, opts := range [][]interlock.Option{
		{interlock.WithObserver(observed)},
		{interlock.WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))},
	} {
		c, err := interlock.New(srv.Client(t), opts...)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		sub, err := runtime.Of(c).Hub.Subscribe(ctx, "pubsub-failures", false)
		require.NoError(t, err)
		t.Cleanup(sub.Close)
	}
	n, err := admin.Do(ctx, admin.B().ClientKill().TypePubsub().Build()).AsInt64()
	require.NoError(t, err)
	require.EqualValues(t, 2, n, "one subscription connection per Client")

	select {
	case err := <-observed:
		assert.ErrorContains(t, err, "lost")
	case <-ctx.Done():
		t.Fatal("the observer heard nothing")
	}
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "pub/sub failed") }, 5*time.Second,
		5*time.Millisecond, "the logger heard nothing")
	assert.Contains(t, logs.String(), "level=WARN")
}

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

// assertClientErr asserts that err is an *interlock.Error of the Client
// itself, of operation op.
func assertClientErr(t *testing.T, err error, op interlock.Op) {
	t.Helper()
	var e *interlock.Error
	if assert.ErrorAs(t, err, &e) {
		assert.Equal(t, interlock.KindClient, e.Kind)
		assert.Equal(t, op, e.Op)
	}
}
