package security_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/latch"
	"github.com/interlock-go/interlock/semaphore"
)

// syncKind is one synchronizer family as the ACL test sees it.
type syncKind struct {
	name string
	// acl is what the family needs on top of aclCommon for names matching
	// "app:*", as docs/operations.md gives it.
	acl []string
	// exercise runs what an application does with the object called name,
	// on two Clients; it returns the first error.
	exercise func(ctx context.Context, a, b *interlock.Client, name string) error
}

var syncKinds = []syncKind{
	{
		name: "semaphore",
		acl: []string{"+incrby", "+decrby",
			"~interlock_receipt:{app:*", "~redisson_sc:{app:*", "&redisson_sc:{app:*"},
		exercise: exerciseSemaphore,
	},
	{
		name: "expirable",
		acl: []string{"+incrby", "+decrby",
			"+zadd", "+zcount", "+zmscore", "+zrange", "+zrangebyscore", "+zrem", "+zscore",
			"~{app:*", "~interlock_receipt:{app:*", "~redisson_sc:{app:*", "&redisson_sc:{app:*"},
		exercise: exerciseExpirable,
	},
	{
		name: "latch",
		acl: []string{"+decr", "~interlock_receipt:{app:*",
			"~redisson_countdownlatch__channel__{app:*", "&redisson_countdownlatch__channel__{app:*"},
		exercise: exerciseLatch,
	},
}

// stepper names the failing step of an exercise.
type stepper string

func (k stepper) step(what string, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %s: %w", k, what, err)
	}
	return nil
}

// want reports a step whose result is not the expected one.
func (k stepper) want(what string, got, want any, err error) error {
	if err == nil && got != want {
		err = fmt.Errorf("got %v, want %v", got, want)
	}
	return k.step(what, err)
}

// background runs f in a goroutine; the channel yields its error.
func background(f func() error) <-chan error {
	got := make(chan error, 1)
	go func() { got <- f() }()
	return got
}

func exerciseSemaphore(ctx context.Context, a, b *interlock.Client, name string) error {
	k := stepper("semaphore")
	sa, sb := semaphore.New(a, name), semaphore.New(b, name)
	ok, err := sa.TrySetPermits(ctx, 1)
	if err := k.want("TrySetPermits", ok, true, err); err != nil {
		return err
	}
	if err := k.step("acquire", sa.Acquire(ctx, 1)); err != nil {
		return err
	}
	n, err := sa.Available(ctx)
	if err := k.want("Available when taken", n, int64(0), err); err != nil {
		return err
	}
	// A waiter on the other Client is woken by the release.
	got := background(func() error { return sb.Acquire(ctx, 1) })
	time.Sleep(300 * time.Millisecond) // let it subscribe
	if err := k.step("release to waiter", sa.Release(ctx, 1)); err != nil {
		return err
	}
	if err := k.step("contended acquire", <-got); err != nil {
		return err
	}
	ok, err = sb.ReleaseIfExists(ctx, 1)
	if err := k.want("ReleaseIfExists", ok, true, err); err != nil {
		return err
	}
	if err := k.step("AddPermits", sa.AddPermits(ctx, 2)); err != nil {
		return err
	}
	ok, err = sb.TryAcquire(ctx, 1, 0)
	if err := k.want("TryAcquire", ok, true, err); err != nil {
		return err
	}
	n, err = sa.Drain(ctx)
	if err := k.want("Drain", n, int64(2), err); err != nil {
		return err
	}
	n, err = sb.Available(ctx)
	if err := k.want("Available after drain", n, int64(0), err); err != nil {
		return err
	}
	if _, err := sa.TTL(ctx); err != nil {
		return k.step("TTL", err)
	}
	ok, err = sa.Delete(ctx)
	return k.want("Delete", ok, true, err)
}

func exerciseExpirable(ctx context.Context, a, b *interlock.Client, name string) error {
	k := stepper("expirable")
	ea, eb := semaphore.NewExpirable(a, name), semaphore.NewExpirable(b, name)
	ok, err := ea.TrySetPermits(ctx, 1)
	if err := k.want("TrySetPermits", ok, true, err); err != nil {
		return err
	}
	held, err := ea.Acquire(ctx, 1, 0) // the watchdog renews it
	if err != nil {
		return k.step("acquire", err)
	}
	guard := ea.Guard(ctx, held...)
	// A waiter on the other Client, woken by the release below.
	var won []semaphore.PermitID
	got := background(func() (err error) {
		won, err = eb.Acquire(ctx, 1, 10*time.Second)
		return err
	})
	// Watchdog renewals past the Client's timeout (1s).
	time.Sleep(1200 * time.Millisecond)
	if err := k.step("watchdog renewal", context.Cause(guard)); err != nil {
		return err
	}
	if left, err := ea.LeaseLeft(ctx, held[0]); err != nil || left <= 0 {
		return k.step("LeaseLeft after renewal", errors.Join(err, fmt.Errorf("left %v", left)))
	}
	ok, err = ea.UpdateLease(ctx, held[0], 5*time.Second)
	if err := k.want("UpdateLease", ok, true, err); err != nil {
		return err
	}
	if left, err := ea.LeaseLeft(ctx, held[0]); err != nil || left <= time.Second {
		return k.step("LeaseLeft after update", errors.Join(err, fmt.Errorf("left %v", left)))
	}
	if err := k.step("Extend", ea.Extend(ctx, held[0], 5*time.Second)); err != nil {
		return err
	}
	if err := k.step("release to waiter", ea.Release(ctx, held...)); err != nil {
		return err
	}
	if err := k.step("contended acquire", <-got); err != nil {
		return err
	}
	for _, c := range []struct {
		what string
		f    func(context.Context) (int64, error)
		want int64
	}{{"Available", ea.Available, 0}, {"Permits", ea.Permits, 1}, {"Acquired", ea.Acquired, 1}} {
		n, err := c.f(ctx)
		if err := k.want(c.what, n, c.want, err); err != nil {
			return err
		}
	}
	// A release that fails is explained: for one id by the score read
	// next to it, for several by the scores read after it (ZMSCORE).
	err = ea.Release(ctx, held...)
	if !errors.Is(err, semaphore.ErrUnknownPermit) {
		return k.step("second release", fmt.Errorf("got %v, want ErrUnknownPermit", err))
	}
	err = ea.Release(ctx, held[0], semaphore.PermitID{1})
	if !errors.Is(err, semaphore.ErrUnknownPermit) || !strings.Contains(err.Error(), held[0].String()) {
		return k.step("release of two", fmt.Errorf("got %v, want ErrUnknownPermit naming %s", err, held[0]))
	}
	if err := k.step("SetPermits", ea.SetPermits(ctx, 2)); err != nil {
		return err
	}
	if err := k.step("AddPermits", ea.AddPermits(ctx, 1)); err != nil {
		return err
	}
	ok, err = eb.TryRelease(ctx, won...)
	if err := k.want("TryRelease", ok, true, err); err != nil {
		return err
	}
	n, err := eb.Available(ctx)
	if err := k.want("Available at the end", n, int64(3), err); err != nil {
		return err
	}
	if _, err := ea.TTL(ctx); err != nil {
		return k.step("TTL", err)
	}
	ok, err = ea.Delete(ctx)
	return k.want("Delete", ok, true, err)
}

func exerciseLatch(ctx context.Context, a, b *interlock.Client, name string) error {
	k := stepper("latch")
	la, lb := latch.New(a, name), latch.New(b, name)
	ok, err := la.TrySetCount(ctx, 2)
	if err := k.want("TrySetCount", ok, true, err); err != nil {
		return err
	}
	// An awaiter on the other Client, woken by the last count-down.
	got := background(func() error { return lb.Await(ctx) })
	time.Sleep(300 * time.Millisecond) // let it subscribe
	if err := k.step("count down", la.CountDown(ctx)); err != nil {
		return err
	}
	n, err := lb.Count(ctx)
	if err := k.want("Count", n, int64(1), err); err != nil {
		return err
	}
	if err := k.step("last count down", la.CountDown(ctx)); err != nil {
		return err
	}
	if err := k.step("await", <-got); err != nil {
		return err
	}
	n, err = la.Count(ctx)
	if err := k.want("Count when open", n, int64(0), err); err != nil {
		return err
	}
	ok, err = la.TrySetCount(ctx, 1)
	if err := k.want("TrySetCount again", ok, true, err); err != nil {
		return err
	}
	ok, err = lb.Delete(ctx)
	return k.want("Delete", ok, true, err)
}

// syncRun is what one exercise left behind.
type syncRun struct {
	err      error    // the exercise's
	denials  []string // the user's ACL LOG entries
	observed []string // renewal and pub/sub errors reported to the Observer
}

// runSync creates user with rules and runs k's exercise on the object
// name, on two Clients connected as user.
func runSync(t *testing.T, srv *redistest.Server, user string, rules []string, k syncKind, name string) syncRun {
	t.Helper()
	admin := srv.Client(t)
	pass := "s3cret-" + user
	setUser(t, admin, user, pass, rules)
	var (
		mu  sync.Mutex // both clients' goroutines report
		run syncRun
	)
	onErr := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		run.observed = append(run.observed, err.Error())
	}
	clients := make([]*interlock.Client, 2)
	for i := range clients {
		rc, err := userClient(t, srv.Addr(), user, pass)
		require.NoError(t, err, "connecting as %s", user)
		// Renewals every 333ms, each with 667ms to spare for a loaded
		// machine.
		c, err := interlock.New(rc, interlock.WithWatchdogTimeout(time.Second),
			interlock.WithObserver(observerFunc(onErr)))
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		clients[i] = c
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := k.exercise(ctx, clients[0], clients[1], name)
	for _, c := range clients {
		require.NoError(t, c.Close()) // stops renewal: nothing runs after this
	}
	mu.Lock()
	defer mu.Unlock()
	run.err = err
	run.denials = aclDenials(t, admin, user)
	return run
}

// syncRules is the reentrant lock's line plus k's, without the entry at
// index skip (-1: none).
func syncRules(k syncKind, skip int) []string {
	rules := append([]string(nil), aclCommon...)
	for i, r := range k.acl {
		if i != skip {
			rules = append(rules, r)
		}
	}
	return rules
}

// TestMinimalACLSync runs the semaphores and the latch as users restricted
// to the reentrant lock's line plus the family's own line, as
// docs/operations.md gives them for names "app:*": no NOPERM anywhere, not
// even in watchdog renewal or pub/sub.
func TestMinimalACLSync(t *testing.T) {
	redistest.RequireProcess(t)
	srv := redistest.Standalone(t)
	for _, k := range syncKinds {
		t.Run(k.name, func(t *testing.T) {
			run := runSync(t, srv, "locker-"+k.name, syncRules(k, -1), k, "app:acl:"+k.name)
			require.NoError(t, run.err)
			assert.Empty(t, run.denials, "ACL LOG")
			assert.Empty(t, run.observed, "renewal and pub/sub errors")
		})
	}
}

// TestMinimalACLSyncNeeded takes one entry of a family's line away at a
// time: the exercise must then run into a refusal, so that no entry of the
// documented lines is superfluous.
func TestMinimalACLSyncNeeded(t *testing.T) {
	redistest.RequireProcess(t)
	srv := redistest.Standalone(t)
	for _, k := range syncKinds {
		for i, missing := range k.acl {
			t.Run(k.name+"/"+missing, func(t *testing.T) {
				if f := redistest.FeaturesAt(t, srv.Addr()); len(f.ACLRules([]string{missing})) == 0 {
					t.Skipf("Redis %s has no rule %s", f.Version, missing)
				}
				user := fmt.Sprintf("short-%s-%d", k.name, i)
				run := runSync(t, srv, user, syncRules(k, i), k, fmt.Sprintf("app:short:%s:%d", k.name, i))
				assert.NotEmpty(t, run.denials, "without %s, a refusal in the ACL LOG", missing)
				assert.True(t, run.err != nil || len(run.observed) > 0,
					"without %s, the exercise fails or the Observer hears of it", missing)
				t.Logf("without %s: %v", missing, run.err)
			})
		}
	}
}
