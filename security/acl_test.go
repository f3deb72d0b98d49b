package security_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/fenced"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/rlock"
	"github.com/interlock-go/interlock/rwlock"
)

// secLock is what the security tests do with every lock kind.
type secLock interface {
	Lock(ctx context.Context) error
	TryLock(ctx context.Context, wait, lease time.Duration) (bool, error)
	Extend(ctx context.Context, lease time.Duration) error
	Unlock(ctx context.Context) error
	ForceUnlock(ctx context.Context) (bool, error)
	IsLocked(ctx context.Context) (bool, error)
	IsHeld(ctx context.Context) (bool, error)
	HoldCount(ctx context.Context) (int, error)
	TTL(ctx context.Context) (time.Duration, error)
	Guard(ctx context.Context) context.Context
}

// secKind is one lock kind as the security tests see it.
type secKind struct {
	name string
	// acl is the kind's ACL rules for lock names matching "app:*", as
	// docs/operations.md gives them.
	acl []string
	// newLock returns the lock called name on c.
	newLock func(c *interlock.Client, name string) secLock
	// channel is where releases of name are announced; for the fair lock
	// it is the prefix of every waiter's own channel.
	channel func(name string) string
}

// aclCommon is what every kind needs: the rueidis handshake, the reentrant
// lock's scripts and queries, pub/sub and latch deletion. See
// docs/operations.md.
var aclCommon = []string{
	"resetkeys", "resetchannels", "-@all",
	"+hello", "+client|tracking", "+ping",
	"+evalsha", "+eval",
	"+exists", "+hexists", "+hget", "+hincrby", "+hset", "+pexpire", "+pttl",
	"+get", "+set", "+del", "+type", "+hscan",
	"+publish", "+subscribe", "+unsubscribe", "+spublish", "+ssubscribe", "+sunsubscribe",
	"+pubsub|shardnumsub",
	"~app:*", "~redisson_unlock_latch:{app:*", "~redisson_lock__channel:{app:*", "&redisson_lock__channel:{app:*",
}

var secKinds = []secKind{
	{
		name:    "rlock",
		acl:     aclCommon,
		newLock: func(c *interlock.Client, name string) secLock { return rlock.New(c, name) },
		channel: keys.LockChannel,
	},
	{
		name: "fairlock",
		acl: append(append([]string(nil), aclCommon...),
			"+lindex", "+lpop", "+lrange", "+lrem", "+rpush",
			"+zadd", "+zincrby", "+zrange", "+zrem", "+zscore",
			"~redisson_lock_queue:{app:*", "~redisson_lock_timeout:{app:*"),
		newLock: func(c *interlock.Client, name string) secLock { return fairlock.New(c, name) },
		channel: keys.LockChannel,
	},
	{
		name: "rwlock-write",
		acl: append(append([]string(nil), aclCommon...),
			"+hdel", "+hkeys", "+hlen", "~{app:*", "~redisson_rwlock:{app:*", "&redisson_rwlock:{app:*"),
		newLock: func(c *interlock.Client, name string) secLock { return rwlock.New(c, name).Write() },
		channel: func(name string) string { return keys.Prefix("redisson_rwlock", name) },
	},
	{
		name: "rwlock-read",
		acl: append(append([]string(nil), aclCommon...),
			"+hdel", "+hkeys", "+hlen", "~{app:*", "~redisson_rwlock:{app:*", "&redisson_rwlock:{app:*"),
		newLock: func(c *interlock.Client, name string) secLock { return rwlock.New(c, name).Read() },
		channel: func(name string) string { return keys.Prefix("redisson_rwlock", name) },
	},
	{
		name: "fenced",
		acl: append(append([]string(nil), aclCommon...),
			"+incr", "~redisson_lock_token:{app:*"),
		newLock: func(c *interlock.Client, name string) secLock { return fenced.New(c, name) },
		channel: keys.LockChannel,
	},
}

// setUser creates (or replaces) an ACL user with password pass and rules,
// less those the server does not know (Redis 6, see Features.ACLRules).
func setUser(t *testing.T, admin rueidis.Client, user, pass string, rules []string) {
	t.Helper()
	rules = redistest.FeaturesOf(t, admin).ACLRules(rules)
	args := append([]string{"reset", "on", ">" + pass}, rules...)
	err := admin.Do(context.Background(), admin.B().Arbitrary("ACL", "SETUSER", user).Args(args...).Build()).Error()
	require.NoError(t, err, "ACL SETUSER %s %s", user, strings.Join(rules, " "))
}

// userClient connects to addr as user. It returns the error of the
// connection attempt instead of failing.
func userClient(t *testing.T, addr, user, pass string) (rueidis.Client, error) {
	t.Helper()
	rc, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{addr}, Username: user, Password: pass, ForceSingleClient: true,
	})
	if err == nil {
		t.Cleanup(rc.Close)
	}
	return rc, err
}

// aclDenials returns the ACL LOG entries of user as "reason object"
// strings, most recent first.
func aclDenials(t *testing.T, admin rueidis.Client, user string) []string {
	t.Helper()
	entries, err := admin.Do(context.Background(), admin.B().Arbitrary("ACL", "LOG").Build()).ToArray()
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		m, err := e.AsStrMap()
		if err != nil {
			continue
		}
		if m["username"] == user {
			out = append(out, m["reason"]+" "+m["object"]+" ("+m["context"]+")")
		}
	}
	return out
}

// exercise runs what an application does with a lock: lock, re-enter,
// unlock, a contended wait that a release ends, a lease that the watchdog
// renews, inspection queries, and a forced unlock that wakes a waiter. Every
// call must succeed; it returns the first error.
func exercise(ctx context.Context, k secKind, a, b *interlock.Client, name string) error {
	la, lb := k.newLock(a, name), k.newLock(b, name)
	step := func(what string, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %s: %w", k.name, what, err)
		}
		return nil
	}
	if err := step("lock", la.Lock(ctx)); err != nil {
		return err
	}
	if err := step("re-enter", la.Lock(ctx)); err != nil {
		return err
	}
	if err := step("extend", la.Extend(ctx, 5*time.Second)); err != nil {
		return err
	}
	if _, err := la.IsLocked(ctx); err != nil {
		return step("IsLocked", err)
	}
	if _, err := la.IsHeld(ctx); err != nil {
		return step("IsHeld", err)
	}
	if _, err := la.HoldCount(ctx); err != nil {
		return step("HoldCount", err)
	}
	if _, err := la.TTL(ctx); err != nil {
		return step("TTL", err)
	}
	if err := step("unlock inner", la.Unlock(ctx)); err != nil {
		return err
	}

	// A waiter on another client is woken by the release. The read lock is
	// shared, so its waiter waits for a writer instead.
	holder := la
	if k.name == "rwlock-read" {
		holder = rwlock.New(a, name).Write()
		if err := step("unlock outer", la.Unlock(ctx)); err != nil {
			return err
		}
		if err := step("write lock", holder.Lock(ctx)); err != nil {
			return err
		}
	}
	// b's holds move between goroutines: give them an explicit owner.
	bctx := interlock.WithOwner(ctx, interlock.NewOwnerID())
	got := make(chan error, 1)
	go func() {
		ok, err := lb.TryLock(bctx, 10*time.Second, 0)
		if err == nil && !ok {
			err = errors.New("wait ran out")
		}
		got <- err
	}()
	// Give the waiter time to subscribe; the release must wake it.
	time.Sleep(300 * time.Millisecond)
	if err := step("release to waiter", holder.Unlock(ctx)); err != nil {
		return err
	}
	if err := step("contended wait", <-got); err != nil {
		return err
	}

	// The watchdog renews b's hold past the Client's watchdog timeout (1s).
	guard := lb.Guard(bctx)
	time.Sleep(1200 * time.Millisecond)
	if err := step("watchdog renewal", context.Cause(guard)); err != nil {
		return err
	}
	if ttl, err := lb.TTL(bctx); err != nil || ttl <= 0 {
		return step("TTL after renewal", errors.Join(err, fmt.Errorf("ttl %v", ttl)))
	}

	// A forced unlock by a if b still holds it, then a waiter wakes up.
	if ok, err := la.ForceUnlock(ctx); err != nil || !ok {
		return step("force unlock", errors.Join(err, fmt.Errorf("forced %v", ok)))
	}
	if err := step("lock after force", la.Lock(ctx)); err != nil {
		return err
	}
	return step("final unlock", la.Unlock(ctx))
}

// TestMinimalACL runs every lock kind as a user restricted to the ACL that
// docs/operations.md gives for lock names "app:*": no NOPERM anywhere, not
// even in background renewal, pub/sub or latch deletion.
func TestMinimalACL(t *testing.T) {
	redistest.RequireProcess(t)
	srv := redistest.Standalone(t)
	admin := srv.Client(t)
	for _, k := range secKinds {
		t.Run(k.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			user := "locker-" + k.name
			setUser(t, admin, user, "s3cret-"+k.name, k.acl)
			var (
				mu   sync.Mutex // both clients' goroutines report
				errs []string
			)
			onErr := func(err error) {
				mu.Lock()
				defer mu.Unlock()
				errs = append(errs, err.Error())
			}
			clients := make([]*interlock.Client, 2)
			for i := range clients {
				rc, err := userClient(t, srv.Addr(), user, "s3cret-"+k.name)
				require.NoError(t, err, "connecting as %s", user)
				// Renewals every 333ms, each with 667ms to spare for a
				// loaded machine.
				c, err := interlock.New(rc, interlock.WithWatchdogTimeout(time.Second),
					interlock.WithObserver(observerFunc(onErr)))
				require.NoError(t, err)
				t.Cleanup(func() { _ = c.Close() })
				clients[i] = c
			}
			name := "app:acl:" + k.name
			require.NoError(t, exercise(ctx, k, clients[0], clients[1], name))
			for _, c := range clients {
				require.NoError(t, c.Close()) // flushes the latch deletions
			}
			assert.Empty(t, aclDenials(t, admin, user), "ACL LOG for %s", user)
			assert.Empty(t, errs, "renewal and pub/sub errors")
			latches, err := admin.Do(ctx, admin.B().Keys().Pattern("redisson_unlock_latch:*"+k.name+"*").Build()).AsStrSlice()
			require.NoError(t, err)
			assert.Empty(t, latches, "latches are deleted by the restricted user")
		})
	}
}

// TestACLDenialIsClear takes one needed permission away at a time and
// checks that the operation that needs it fails at once with an error that
// names the refusal, without hanging or panicking. Redis 7.0 reports a
// refusal inside a script as "ERR The user executing the script can't run
// this command"; everything else says NOPERM.
func TestACLDenialIsClear(t *testing.T) {
	redistest.RequireProcess(t)
	srv := redistest.Standalone(t)
	admin := srv.Client(t)
	cleaner, err := interlock.New(admin)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cleaner.Close() })
	for i, tc := range []struct {
		missing string
		op      string // the operation that needs it: lock, unlock or wait
	}{
		{"+evalsha", "lock"},
		{"+eval", "lock"},
		{"~app:*", "lock"},
		{"+pexpire", "lock"},
		{"~redisson_unlock_latch:{app:*", "unlock"},
		{"+publish", "unlock"},
		{"&redisson_lock__channel:{app:*", "wait"},
	} {
		t.Run(tc.missing, func(t *testing.T) {
			if f := redistest.FeaturesOf(t, admin); len(f.ACLRules([]string{tc.missing})) == 0 {
				t.Skipf("Redis %s has no rule %s", f.Version, tc.missing)
			}
			var rules []string
			for _, r := range secKinds[0].acl {
				if r != tc.missing {
					rules = append(rules, r)
				}
			}
			user := "denied"
			setUser(t, admin, user, "pw", rules)
			rc, err := userClient(t, srv.Addr(), user, "pw")
			require.NoError(t, err)
			c, err := interlock.New(rc)
			require.NoError(t, err)
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			name := fmt.Sprintf("app:denied:%s:%d", tc.op, i)
			defer func() { _, _ = rlock.New(cleaner, name).ForceUnlock(context.Background()) }()
			m := rlock.New(c, name)
			start := time.Now()
			switch tc.op {
			case "lock":
				err = m.Lock(ctx)
			case "unlock":
				require.NoError(t, m.Lock(ctx))
				err = m.Unlock(ctx)
			case "wait":
				require.NoError(t, m.Lock(ctx))
				_, err = rlock.New(c, name).TryLock(interlock.WithOwner(ctx, interlock.NewOwnerID()), 2*time.Second, 0)
			}
			require.Error(t, err, "without %s", tc.missing)
			assert.Less(t, time.Since(start), 2*time.Second, "fails at once, no hang")
			assert.NotErrorIs(t, err, context.DeadlineExceeded)
			msg := err.Error()
			assert.True(t, strings.Contains(msg, "NOPERM") || strings.Contains(msg, "can't run this command"),
				"the error names the refusal: %v", err)
			assert.Contains(t, msg, name, "the error names the lock")
			t.Logf("without %s: %v", tc.missing, err)
		})
	}
}

// observerFunc is an interlock.Observer that reports renewal failures,
// lost locks, pub/sub failures, refusals and failed undo tries.
type observerFunc func(err error)

func (f observerFunc) Observe(_ context.Context, e interlock.Event) {
	switch {
	case e.Op == interlock.OpRenew && e.Failures > 0:
		f(e.Err)
	case e.Op == interlock.OpLost:
		f(fmt.Errorf("%s %s lost: %w", e.Kind, e.Name, e.Err))
	case e.Op == interlock.OpPubSub && e.Outcome == interlock.OutcomeError:
		f(fmt.Errorf("pub/sub: %w", e.Err))
	case e.Op == interlock.OpRefused || (e.Op == interlock.OpUndo && e.Outcome == interlock.OutcomeError):
		f(fmt.Errorf("%s %s %s: %w", e.Op, e.Kind, e.Name, e.Err))
	}
}
