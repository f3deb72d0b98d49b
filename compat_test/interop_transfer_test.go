package compat_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fenced"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/runtime"
	"github.com/interlock-go/interlock/rlock"
	"github.com/interlock-go/interlock/rwlock"
)

// Transfer on unlock next to a Redisson waiter, on the shared standalone
// server, for every peer version and every kind that transfers (reentrant,
// write, fenced). 16 goroutines take and release one lock in a loop for the
// whole run, so that nearly every release finds a waiter of the same
// Client standing and passes the lock to it, with no message; meanwhile one
// Java thread asks for the same lock again and again (tryLock with a long
// wait), holds it for a millisecond and releases it. The Java waiter is
// woken only by a real release, which a run of transfers must end with
// (runtime.TransferRun, runtime.TransferSpan), so every one of its
// acquisitions must come, and within transferJavaBound. The log line gives
// the Java waits' percentiles, the Go acquisition rate, the transfers and
// the real releases (messages on the lock's channel, less Java's own).
//
// Every hold, Go's and Java's, goes through the lock's gauge (INCR must
// give 1, DECR 0; for Java holds the test does it between the peer's
// replies), and fenced tokens must grow from hold to hold. In the mode
// "one-client" the goroutines share one Client and Stats().Transfers must
// grow; in "client-each" each goroutine has a Client of its own, so that no
// release can be a transfer (the count must stay 0): the same Java waits
// without transfers, for comparison.
//
//	go test -count=1 -run 'TestInteropTransfer' -v ./compat_test/

const (
	transferGoroutines = 16
	// transferRounds is how many acquisitions the Java thread makes per
	// kind and mode (transferRoundsShort with -short).
	transferRounds, transferRoundsShort = 30, 10
	transferGoWork                      = 100 * time.Microsecond // a Go hold's work, between the gauge's INCR and DECR
	transferJavaHold                    = time.Millisecond       // a Java hold's, likewise
	// transferWarmup lets the Go side run alone first, so that the Java
	// thread's first request meets a run of transfers under way.
	transferWarmup = 300 * time.Millisecond
	// transferJavaTry is each Java tryLock's wait: a false answer means
	// the Java waiter starved that long.
	transferJavaTry = 30 * time.Second
	// transferJavaBound bounds every Java wait, request to reply as seen
	// from Go, on a loaded two-core machine, behind 16 goroutines of one
	// Client (transfers) or of a Client each (none). Measured there, per
	// kind and version over 30 waits: with transfers p50 13–15 ms and the
	// slowest 17–171 ms, without p50 8–22 ms and the slowest 42–94 ms;
	// with the CI run beside other builds, the slowest 2.45 s without
	// transfers, which is scheduling. Before runs ended by yielding to a
	// subscribed process, a starved Java waiter waited 8.9 s.
	transferJavaBound = 5 * time.Second
)

// transferKind is one lock kind that transfers, on both sides.
type transferKind struct {
	kind   string // the peer's kind
	javaOp string // the peer's timed acquisition, answering true/false or a token/null
	// newLock returns the kind's lock name on c, as acquire and release.
	newLock func(c *interlock.Client, name string) transferLock
	// extraKeys are the keys besides the lock's hash that the kind uses.
	extraKeys func(name string) []string
	// channel is where the lock's real releases are announced.
	channel func(name string) string
}

type transferLock struct {
	lock   func(context.Context) (uint64, error) // the token for a fenced lock, else 0
	unlock func(context.Context) error
}

var transferKinds = []transferKind{
	{
		kind: "reentrant", javaOp: "tryLock",
		newLock: func(c *interlock.Client, name string) transferLock {
			m := rlock.New(c, name)
			return transferLock{func(ctx context.Context) (uint64, error) { return 0, m.Lock(ctx) }, m.Unlock}
		},
		extraKeys: func(string) []string { return nil },
		channel:   keys.LockChannel,
	},
	{
		kind: "write", javaOp: "tryLock",
		newLock: func(c *interlock.Client, name string) transferLock {
			w := rwlock.New(c, name).Write()
			return transferLock{func(ctx context.Context) (uint64, error) { return 0, w.Lock(ctx) }, w.Unlock}
		},
		extraKeys: func(string) []string { return nil },
		channel:   func(name string) string { return keys.Prefix("redisson_rwlock", name) },
	},
	{
		kind: "fenced", javaOp: "tryLockToken",
		newLock: func(c *interlock.Client, name string) transferLock {
			m := fenced.New(c, name)
			return transferLock{m.LockToken, m.Unlock}
		},
		extraKeys: func(name string) []string { return []string{keys.Prefix("redisson_lock_token", name)} },
		channel:   keys.LockChannel,
	},
}

// transferModes: how many Clients the goroutines share.
var transferModes = []struct {
	name      string
	oneClient bool
}{{"one-client", true}, {"client-each", false}}

func TestInteropTransfer(t *testing.T) {
	t.Parallel()
	for _, version := range peerVersions {
		t.Run("redisson-"+version, func(t *testing.T) {
			parallelHeavy(t)
			p := startJavaPeer(t, version, []string{standaloneAddr})
			p.Owner(t, 1) // starts the Java thread
			for _, k := range transferKinds {
				t.Run(k.kind, func(t *testing.T) {
					for _, mode := range transferModes {
						t.Run(mode.name, func(t *testing.T) { interopTransfer(t, p, k, mode.oneClient) })
					}
				})
			}
		})
	}
}

// interopTransfer runs the Go goroutines on a lock of kind k, on one Client
// or on a Client each, and the Java thread's acquisitions next to them.
func interopTransfer(t *testing.T, p *javaPeer, k transferKind, oneClient bool) {
	rounds := transferRounds
	if testing.Short() {
		rounds = transferRoundsShort
	}
	rc := redistest.NewClient(t, standaloneAddr)
	name := unique("interop-transfer-" + k.kind)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, key := range append([]string{name, gaugeKey(name), holderKey(name)}, k.extraKeys(name)...) {
			rc.Do(ctx, rc.B().Del().Key(key).Build())
		}
	})
	ctx := testCtx(t, 5*time.Minute)

	// The Clients: one for every goroutine, or one for all, each on a
	// connection of its own.
	clients := make([]*interlock.Client, transferGoroutines)
	for g := range clients {
		if oneClient && g > 0 {
			clients[g] = clients[0]
			continue
		}
		clients[g] = newLockClient(t, redistest.NewClient(t, standaloneAddr))
	}
	distinct := slices.Compact(slices.Clone(clients))
	transfers := func() (n uint64) {
		for _, c := range distinct {
			n += c.Stats().Transfers
		}
		return n
	}

	var (
		violMu     sync.Mutex
		violations []string
		lastToken  uint64 // the latest hold's token, written by its holder
	)
	// enter and leave bracket every hold, Go's and Java's.
	enter := func(who string, token uint64) error {
		v, err := tortureGaugeIn(ctx, rc, name, who)
		if err != nil {
			return err
		}
		violMu.Lock()
		defer violMu.Unlock()
		if v != "" {
			violations = append(violations, v)
		}
		if k.kind == "fenced" {
			if token <= lastToken {
				violations = append(violations, fmt.Sprintf("%s got token %d after %d", who, token, lastToken))
			}
			lastToken = max(lastToken, token)
		}
		return nil
	}
	leave := func(who string) error {
		v, err := tortureGaugeOut(ctx, rc, name, who)
		if v != "" {
			violMu.Lock()
			violations = append(violations, v)
			violMu.Unlock()
		}
		return err
	}

	// Every real release publishes a message, which is all that wakes the
	// Java waiter: count them.
	var messages atomic.Int64
	subCtx, unsubscribe := context.WithCancel(ctx)
	subscribed := make(chan error, 1)
	go func() {
		subscribed <- rc.Receive(subCtx, rc.B().Subscribe().Channel(k.channel(name)).Build(),
			func(rueidis.PubSubMessage) { messages.Add(1) })
	}()
	defer func() {
		unsubscribe()
		<-subscribed
	}()

	// The Go side: from now until stop.
	var (
		stop     atomic.Bool
		acquired atomic.Int64
		wg       sync.WaitGroup
		errMu    sync.Mutex
		goErrs   []error
	)
	for g, c := range clients {
		l := k.newLock(c, name)
		who := "go." + strconv.Itoa(g)
		wg.Go(func() {
			err := func() error {
				for !stop.Load() {
					token, err := l.lock(ctx)
					if err != nil {
						return fmt.Errorf("lock: %w", err)
					}
					if err := enter(who, token); err != nil {
						return err
					}
					time.Sleep(transferGoWork)
					if err := leave(who); err != nil {
						return err
					}
					if err := l.unlock(ctx); err != nil {
						return fmt.Errorf("unlock: %w", err)
					}
					acquired.Add(1)
				}
				return nil
			}()
			if err != nil {
				errMu.Lock()
				goErrs = append(goErrs, fmt.Errorf("%s: %w", who, err))
				errMu.Unlock()
			}
		})
	}
	stopGo := sync.OnceFunc(func() {
		stop.Store(true)
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Errorf("the Go goroutines did not stop within a minute of the end")
		}
	})
	defer stopGo()

	// The warm-up: transferWarmup, and longer while a loaded machine has
	// not let the Go side in yet.
	select {
	case <-time.After(transferWarmup):
	case <-ctx.Done():
	}
	require.True(t, waitFor(time.Minute, func() bool { return acquired.Load() > 0 }), "no Go acquisition in a minute of warm-up")
	goBefore, transfersBefore, messagesBefore := acquired.Load(), transfers(), messages.Load()

	// The Java side: rounds acquisitions, one after the other.
	call := func(req peerReq) (peerReply, error) {
		select {
		case r := <-p.Start(t, req):
			if !r.OK {
				return r, fmt.Errorf("java %s %s: %s", req.Op, req.Kind, r.Err)
			}
			return r, nil
		case <-time.After(transferJavaTry + 30*time.Second):
			return peerReply{}, fmt.Errorf("java %s %s: no reply within %v", req.Op, req.Kind, transferJavaTry+30*time.Second)
		}
	}
	var waits, javaWaits []time.Duration // as seen from Go, and as the peer timed its call
	start := time.Now()
	for i := range rounds {
		who := "java." + strconv.Itoa(i)
		sent := time.Now()
		r, err := call(peerReq{Thread: 1, Op: k.javaOp, Kind: k.kind, Name: name, Wait: transferJavaTry})
		waited := time.Since(sent)
		require.NoError(t, err)
		token, ok := transferJavaResult(t, k, r)
		if !ok {
			t.Errorf("Redisson %s: Java acquisition %d of %d not granted within its wait of %v (%d Go acquisitions meanwhile)",
				p.Version(), i+1, rounds, transferJavaTry, acquired.Load()-goBefore)
			break
		}
		waits, javaWaits = append(waits, waited), append(javaWaits, r.Elapsed)
		require.NoError(t, enter(who, token))
		time.Sleep(transferJavaHold)
		require.NoError(t, leave(who))
		_, err = call(peerReq{Thread: 1, Op: "unlock", Kind: k.kind, Name: name})
		require.NoError(t, err)
	}
	elapsed := time.Since(start)
	goN, passed := acquired.Load()-goBefore, transfers()-transfersBefore
	released := messages.Load() - messagesBefore - int64(len(waits)) // less Java's own unlocks

	stopGo()
	require.NoError(t, errors.Join(goErrs...))

	mode := "16 goroutines on one Client"
	if !oneClient {
		mode = "16 goroutines on a Client each"
	}
	slowest := time.Duration(0)
	if len(waits) > 0 {
		slowest = slices.Max(waits)
	}
	t.Logf("Redisson %s, %s, %s: Java waits %s (in Java: %s); Go %d acquisitions in %v (%.0f/s), %d transfers (%.0f%% of them), %d real releases (%.1f per Java acquisition)",
		p.Version(), k.kind, mode, latencySummary(waits), latencySummary(javaWaits), goN,
		elapsed.Round(time.Millisecond), float64(goN)/elapsed.Seconds(), passed, 100*float64(passed)/float64(max(goN, 1)),
		released, float64(released)/float64(max(len(waits), 1)))

	assert.Empty(t, violations, "exclusion or token order violated")
	assert.Len(t, waits, rounds, "Java acquisitions")
	assert.Less(t, slowest, transferJavaBound, "the slowest Java wait")
	assert.Positive(t, goN, "Go acquisitions while Java was at it")
	if oneClient {
		assert.Positive(t, passed, "no transfer while Java was at it")
	} else {
		assert.Zero(t, passed, "transfers between Clients")
	}
	for _, c := range distinct {
		assert.Zero(t, runtime.Of(c).Transfers.Offers(), "offers left standing")
	}
	g, err := rc.Do(ctx, rc.B().Get().Key(gaugeKey(name)).Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "0", g, "the gauge at the end")
	n, err := rc.Do(ctx, rc.B().Exists().Key(name).Build()).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, n, "the lock left behind")
}

// transferJavaResult reads the reply of k's Java acquisition: whether it
// was granted, and the token of a fenced lock.
func transferJavaResult(t *testing.T, k transferKind, r peerReply) (token uint64, ok bool) {
	t.Helper()
	if k.javaOp == "tryLock" {
		return 0, r.Bool(t)
	}
	if string(r.Result) == "null" {
		return 0, false
	}
	require.NoError(t, json.Unmarshal(r.Result, &token), "tryLockToken result %s", r.Result)
	return token, true
}
