package interlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/fenced"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/latch"
	"github.com/interlock-go/interlock/multilock"
	"github.com/interlock-go/interlock/nonreentrant"
	"github.com/interlock-go/interlock/rlock"
	"github.com/interlock-go/interlock/rwlock"
	"github.com/interlock-go/interlock/semaphore"
	"github.com/interlock-go/interlock/spin"
)

// foreign is data of another kind put under a synchronizer's name.
type foreign struct {
	name  string // in the test's name
	typ   string // what the error must say the key holds
	put   func(b rueidis.Builder, key string) rueidis.Commands
	locks bool // put under locks' names
	syncs bool // put under semaphores' and latches' names
}

// foreigns are what an application, or another kind, may keep under a
// name a synchronizer is given: every Redis type, a lock's hash under a
// semaphore's name and a semaphore's count under a lock's.
func foreigns(clientID string) []foreign {
	one := func(cmd ...rueidis.Completed) rueidis.Commands { return cmd }
	return []foreign{
		{"string", "string", func(b rueidis.Builder, k string) rueidis.Commands {
			return one(b.Set().Key(k).Value("hello").Build())
		}, true, true},
		{"hash", "hash", func(b rueidis.Builder, k string) rueidis.Commands {
			return one(b.Hset().Key(k).FieldValue().FieldValue("a", "1").FieldValue("user", "bob").Build())
		}, true, true},
		{"list", "list", func(b rueidis.Builder, k string) rueidis.Commands {
			return one(b.Rpush().Key(k).Element("x", "y").Build())
		}, true, true},
		{"set", "set", func(b rueidis.Builder, k string) rueidis.Commands {
			return one(b.Sadd().Key(k).Member("x").Build())
		}, true, true},
		{"zset", "zset", func(b rueidis.Builder, k string) rueidis.Commands {
			return one(b.Zadd().Key(k).ScoreMember().ScoreMember(1, "x").Build())
		}, true, true},
		{"stream", "stream", func(b rueidis.Builder, k string) rueidis.Commands {
			return one(b.Xadd().Key(k).Id("*").FieldValue().FieldValue("f", "v").Build())
		}, true, true},
		{"lock's hash", "hash", func(b rueidis.Builder, k string) rueidis.Commands {
			return one(b.Hset().Key(k).FieldValue().FieldValue(clientID+":1", "1").Build(),
				b.Pexpire().Key(k).Milliseconds(60000).Build())
		}, false, true},
		{"semaphore's count", "string", func(b rueidis.Builder, k string) rueidis.Commands {
			return one(b.Set().Key(k).Value("5").Build())
		}, true, false},
	}
}

// wrongTypeOp is one public operation of a synchronizer; cannot names the
// foreigns it cannot tell from its own data, and why.
type wrongTypeOp struct {
	name   string
	run    func(ctx context.Context) error
	cannot map[string]string
}

// lockerOps are the operations of interlock.Locker that send something
// (Name, Guard and Remaining only read the Client's records).
func lockerOps(l interlock.Locker) []wrongTypeOp {
	return []wrongTypeOp{
		{"Lock", l.Lock, nil},
		{"LockLease", func(ctx context.Context) error { return l.LockLease(ctx, time.Minute) }, nil},
		{"TryLock", func(ctx context.Context) error { return second(l.TryLock(ctx, 0, 0)) }, nil},
		{"TryLock wait", func(ctx context.Context) error { return second(l.TryLock(ctx, 2*time.Second, 0)) }, nil},
		{"Unlock", l.Unlock, nil},
		{"ForceUnlock", func(ctx context.Context) error { return second(l.ForceUnlock(ctx)) }, nil},
		{"IsLocked", func(ctx context.Context) error { return second(l.IsLocked(ctx)) }, nil},
		{"IsHeld", func(ctx context.Context) error { return second(l.IsHeld(ctx)) }, nil},
		{"HoldCount", func(ctx context.Context) error { return second(l.HoldCount(ctx)) }, nil},
		{"TTL", func(ctx context.Context) error { return second(l.TTL(ctx)) }, nil},
	}
}

func second[T any](_ T, err error) error { return err }

// cannot marks ops as unable to tell foreign f, for reason why.
func cannot(ops []wrongTypeOp, f, why string, names ...string) []wrongTypeOp {
	for i := range ops {
		for _, n := range names {
			if ops[i].name == n {
				if ops[i].cannot == nil {
					ops[i].cannot = map[string]string{}
				}
				ops[i].cannot[f] = why
			}
		}
	}
	return ops
}

// wrongTypeKinds builds every kind's operations on the synchronizer
// called name.
var wrongTypeKinds = []struct {
	name  string
	lock  bool
	build func(c *interlock.Client, name string) []wrongTypeOp
}{
	{"rlock", true, func(c *interlock.Client, n string) []wrongTypeOp { return lockerOps(rlock.New(c, n)) }},
	{"fairlock", true, func(c *interlock.Client, n string) []wrongTypeOp {
		return cannot(lockerOps(fairlock.New(c, n)), "hash", "a fair try without a wait answers busy alike for any hash", "TryLock")
	}},
	{"rwlock read", true, func(c *interlock.Client, n string) []wrongTypeOp {
		return cannot(lockerOps(rwlock.New(c, n).Read()), "hash", "a hash without a mode field is a free lock to Redisson's scripts",
			"Lock", "LockLease", "TryLock", "TryLock wait")
	}},
	{"rwlock write", true, func(c *interlock.Client, n string) []wrongTypeOp {
		return cannot(lockerOps(rwlock.New(c, n).Write()), "hash", "a hash without a mode field is a free lock to Redisson's scripts",
			"Lock", "LockLease", "TryLock", "TryLock wait")
	}},
	{"fenced", true, func(c *interlock.Client, n string) []wrongTypeOp {
		m := fenced.New(c, n)
		return append(lockerOps(m),
			wrongTypeOp{"LockToken", func(ctx context.Context) error { return second(m.LockToken(ctx)) }, nil},
			wrongTypeOp{"LockLeaseToken", func(ctx context.Context) error { return second(m.LockLeaseToken(ctx, time.Minute)) }, nil},
			wrongTypeOp{"TryLockToken", func(ctx context.Context) error {
				_, _, err := m.TryLockToken(ctx, 0, 0)
				return err
			}, nil},
			wrongTypeOp{"Token", func(ctx context.Context) error { return second(m.Token(ctx)) }, nil})
	}},
	{"nonreentrant", true, func(c *interlock.Client, n string) []wrongTypeOp { return lockerOps(nonreentrant.New(c, n)) }},
	{"nonreentrant fair", true, func(c *interlock.Client, n string) []wrongTypeOp {
		return cannot(lockerOps(nonreentrant.NewFair(c, n)), "hash", "a fair try without a wait answers busy alike for any hash", "TryLock")
	}},
	{"spin", true, func(c *interlock.Client, n string) []wrongTypeOp { return lockerOps(spin.New(c, n)) }},
	{"multilock", true, func(c *interlock.Client, n string) []wrongTypeOp {
		m := multilock.New(rlock.New(c, n), rlock.New(c, n+":other"))
		return []wrongTypeOp{
			{"Lock", m.Lock, nil},
			{"LockLease", func(ctx context.Context) error { return m.LockLease(ctx, time.Minute) }, nil},
			{"TryLock", func(ctx context.Context) error { return second(m.TryLock(ctx, 0, 0)) }, nil},
			{"TryLock wait", func(ctx context.Context) error { return second(m.TryLock(ctx, 2*time.Second, 0)) }, nil},
			{"Unlock", m.Unlock, nil},
			{"IsHeld", func(ctx context.Context) error { return second(m.IsHeld(ctx)) }, nil},
		}
	}},
	{"semaphore", false, func(c *interlock.Client, n string) []wrongTypeOp {
		s := semaphore.New(c, n)
		return []wrongTypeOp{
			{"TrySetPermits", func(ctx context.Context) error { return second(s.TrySetPermits(ctx, 1)) }, nil},
			{"TrySetPermitsTTL", func(ctx context.Context) error { return second(s.TrySetPermitsTTL(ctx, 1, time.Minute)) }, nil},
			{"AddPermits", func(ctx context.Context) error { return s.AddPermits(ctx, 1) }, nil},
			{"Acquire", func(ctx context.Context) error { return s.Acquire(ctx, 1) }, nil},
			{"TryAcquire", func(ctx context.Context) error { return second(s.TryAcquire(ctx, 1, 0)) }, nil},
			{"TryAcquire wait", func(ctx context.Context) error { return second(s.TryAcquire(ctx, 1, 2*time.Second)) }, nil},
			{"Release", func(ctx context.Context) error { return s.Release(ctx, 1) }, nil},
			{"ReleaseIfExists", func(ctx context.Context) error { return second(s.ReleaseIfExists(ctx, 1)) }, nil},
			{"Available", func(ctx context.Context) error { return second(s.Available(ctx)) }, nil},
			{"Drain", func(ctx context.Context) error { return second(s.Drain(ctx)) }, nil},
			{"TTL", func(ctx context.Context) error { return second(s.TTL(ctx)) }, nil},
			{"Delete", func(ctx context.Context) error { return second(s.Delete(ctx)) }, nil},
		}
	}},
	{"expirable", false, func(c *interlock.Client, n string) []wrongTypeOp {
		s := semaphore.NewExpirable(c, n)
		id, err := semaphore.ParsePermitID("0123456789abcdef0123456789abcdef")
		if err != nil {
			panic(err)
		}
		return []wrongTypeOp{
			{"TrySetPermits", func(ctx context.Context) error { return second(s.TrySetPermits(ctx, 1)) }, nil},
			{"SetPermits", func(ctx context.Context) error { return s.SetPermits(ctx, 1) }, nil},
			{"AddPermits", func(ctx context.Context) error { return s.AddPermits(ctx, 1) }, nil},
			{"Available", func(ctx context.Context) error { return second(s.Available(ctx)) }, nil},
			{"Permits", func(ctx context.Context) error { return second(s.Permits(ctx)) }, nil},
			{"Acquired", func(ctx context.Context) error { return second(s.Acquired(ctx)) }, nil},
			{"Acquire", func(ctx context.Context) error { return second(s.Acquire(ctx, 1, 0)) }, nil},
			{"TryAcquire", func(ctx context.Context) error {
				_, _, err := s.TryAcquire(ctx, 1, 0, 0)
				return err
			}, nil},
			{"TryAcquire wait", func(ctx context.Context) error {
				_, _, err := s.TryAcquire(ctx, 1, 2*time.Second, 0)
				return err
			}, nil},
			{"Release", func(ctx context.Context) error { return s.Release(ctx, id) }, nil},
			{"TryRelease", func(ctx context.Context) error { return second(s.TryRelease(ctx, id)) }, nil},
			{"UpdateLease", func(ctx context.Context) error { return second(s.UpdateLease(ctx, id, time.Minute)) }, nil},
			{"Extend", func(ctx context.Context) error { return s.Extend(ctx, id, time.Minute) }, nil},
			{"LeaseLeft", func(ctx context.Context) error { return second(s.LeaseLeft(ctx, id)) }, nil},
			{"TTL", func(ctx context.Context) error { return second(s.TTL(ctx)) }, nil},
			{"Delete", func(ctx context.Context) error { return second(s.Delete(ctx)) }, nil},
		}
	}},
	{"latch", false, func(c *interlock.Client, n string) []wrongTypeOp {
		l := latch.New(c, n)
		return []wrongTypeOp{
			{"TrySetCount", func(ctx context.Context) error { return second(l.TrySetCount(ctx, 1)) }, nil},
			{"CountDown", l.CountDown, nil},
			{"Count", func(ctx context.Context) error { return second(l.Count(ctx)) }, nil},
			{"Await", l.Await, nil},
			{"Delete", func(ctx context.Context) error { return second(l.Delete(ctx)) }, nil},
		}
	}},
}

// Every operation of every kind that meets a key holding data of another
// kind fails with an *interlock.Error wrapping ErrInvalid that names the
// key and what it holds, at once, and leaves the key as it was.
func TestWrongTypeKeys(t *testing.T) {
	c := newClient(t)
	rc := redistest.NewClient(t, addr)
	for _, kind := range wrongTypeKinds {
		for _, f := range foreigns(c.ID()) {
			if (kind.lock && !f.locks) || (!kind.lock && !f.syncs) {
				continue
			}
			t.Run(kind.name+"/"+f.name, func(t *testing.T) {
				key := "wrongtype:" + strings.ReplaceAll(t.Name(), "/", ":")
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				require.NoError(t, rc.Do(ctx, rc.B().Del().Key(key).Build()).Error())
				for _, r := range rc.DoMulti(ctx, f.put(rc.B(), key)...) {
					require.NoError(t, r.Error())
				}
				before, err := rc.Do(ctx, rc.B().Dump().Key(key).Build()).ToString()
				require.NoError(t, err)
				ttl := func() int64 {
					n, err := rc.Do(ctx, rc.B().Pttl().Key(key).Build()).AsInt64()
					require.NoError(t, err)
					return n
				}
				ttlBefore := ttl()
				for _, op := range kind.build(c, key) {
					if why, ok := op.cannot[f.name]; ok {
						t.Logf("%s: skipped: %s", op.name, why)
						continue
					}
					octx, cancel := context.WithTimeout(ctx, 10*time.Second)
					start := time.Now()
					err := op.run(octx)
					cancel()
					if !assert.ErrorIs(t, err, interlock.ErrInvalid, "%s", op.name) {
						continue
					}
					var ie *interlock.Error
					assert.True(t, errors.As(err, &ie), "%s: %v is an *interlock.Error", op.name, err)
					assert.Contains(t, err.Error(), key, "%s names the key", op.name)
					assert.Contains(t, err.Error(), "holds", "%s says what the key holds", op.name)
					assert.Contains(t, err.Error(), f.typ, "%s names the data", op.name)
					assert.Less(t, time.Since(start), 5*time.Second, "%s fails at once", op.name)
					after, err := rc.Do(ctx, rc.B().Dump().Key(key).Build()).ToString()
					if assert.NoError(t, err, "%s left the key", op.name) {
						assert.Equal(t, before, after, "%s left the key as it was", op.name)
					}
					if ttlBefore < 0 {
						assert.Equal(t, ttlBefore, ttl(), "%s left the key without a TTL", op.name)
					} else {
						assert.InDelta(t, ttlBefore, ttl(), 10000, "%s left the key's TTL", op.name)
					}
				}
				assert.Zero(t, c.Stats().Holds, "no hold is recorded")
			})
		}
	}
}

// A fenced lock's token counter that holds no integer fails the fenced
// acquisitions and Token alike, naming the counter, before any hold is
// taken.
func TestWrongTypeFencingToken(t *testing.T) {
	c := newClient(t)
	rc := redistest.NewClient(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := fenced.New(c, "wrongtype:"+t.Name())
	token := "redisson_lock_token:{" + m.Name() + "}"
	require.NoError(t, rc.Do(ctx, rc.B().Set().Key(token).Value("hello").Build()).Error())
	for op, run := range map[string]func() error{
		"LockToken":    func() error { return second(m.LockToken(ctx)) },
		"TryLockToken": func() error { _, _, err := m.TryLockToken(ctx, 0, 0); return err },
		"Lock":         func() error { return m.Lock(ctx) },
		"Token":        func() error { return second(m.Token(ctx)) },
	} {
		err := run()
		require.ErrorIs(t, err, interlock.ErrInvalid, op)
		assert.Contains(t, err.Error(), token+` holds another type of data: the string "hello", not an integer count`, op)
		v, err := rc.Do(ctx, rc.B().Get().Key(token).Build()).ToString()
		require.NoError(t, err)
		assert.Equal(t, "hello", v, "%s left the counter as it was", op)
		n, err := rc.Do(ctx, rc.B().Exists().Key(m.Name()).Build()).AsInt64()
		require.NoError(t, err)
		assert.Zero(t, n, "%s took no hold", op)
	}
	assert.Zero(t, c.Stats().Holds)
}
