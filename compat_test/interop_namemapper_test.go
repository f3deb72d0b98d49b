package compat_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/rlock"
)

// Live interop under a name mapper: a Go Client with
// interlock.PrefixNames(namePrefix) and a Redisson peer whose NameMapper
// prefixes the same way (Config.setNameMapper on 4.x, the server config's
// on 3.x) meet on the key "app:NAME": they exclude each other and wake each
// other, on the reentrant and the fair lock. A Go Client without the mapper
// works on "NAME" and excludes neither. Standalone only: the cluster adds
// nothing that the mapping could change.

// nameWakeBound is how soon a waiter must hold the lock once the other
// side released it; both sides have a 30s watchdog, so only the release
// message explains it (for a Go fair waiter, which asks again every
// second, a tap checks that Java published it on the waiter's channel).
const nameWakeBound = wakeBound

func withPeerNamePrefix(p string) peerOption {
	return func(c *peerConfig) { c.namePrefix = p }
}

// nameEnv is one peer version with a mapped and a plain Go Client.
type nameEnv struct {
	rc    rueidis.Client
	basic *basicEnv // the mapped Client and the peer, for basicEnv's helpers
	plain *interlock.Client
	peer  *javaPeer
}

// nameKind is a lock kind on both sides.
type nameKind struct {
	java string
	New  func(c *interlock.Client, name string) interlock.Locker
	// awaitWaiter waits until one waiter (Go or Java) on name, as the
	// mapped side names it, is ready to be woken.
	awaitWaiter func(t *testing.T, e *nameEnv, mapped string)
	// channel is where the waiter owner waits on the mapped name.
	channel func(mapped, owner string) string
}

func TestInteropNameMapper(t *testing.T) {
	t.Parallel()
	kinds := map[string]nameKind{
		"reentrant": {
			java: "reentrant",
			New:  func(c *interlock.Client, n string) interlock.Locker { return rlock.New(c, n) },
			awaitWaiter: func(t *testing.T, e *nameEnv, mapped string) {
				e.basic.waitSubscribers(t, mapped, 1)
			},
			channel: func(mapped, _ string) string { return keys.LockChannel(mapped) },
		},
		"fair": {
			java: "fair",
			New:  func(c *interlock.Client, n string) interlock.Locker { return fairlock.New(c, n) },
			awaitWaiter: func(t *testing.T, e *nameEnv, mapped string) {
				queue := "redisson_lock_queue:{" + mapped + "}"
				require.Eventually(t, func() bool {
					n, err := e.rc.Do(context.Background(), e.rc.B().Llen().Key(queue).Build()).AsInt64()
					return err == nil && n == 1
				}, basicSubscribeWait, 5*time.Millisecond, "one waiter in %s", queue)
			},
			channel: func(mapped, owner string) string { return keys.LockChannel(mapped) + ":" + owner },
		},
	}
	for _, v := range peerVersions {
		t.Run("redisson-"+v, func(t *testing.T) {
			parallel(t)
			rc := redistest.NewClient(t, standaloneAddr)
			mapped := newLockClient(t, rc, interlock.WithNameMapper(interlock.PrefixNames(namePrefix)))
			peer := startJavaPeer(t, v, []string{standaloneAddr}, withPeerNamePrefix(namePrefix))
			e := &nameEnv{
				rc:    rc,
				basic: &basicEnv{version: v, addrs: []string{standaloneAddr}, rc: rc, c: mapped, peer: peer},
				plain: newLockClient(t, rc),
				peer:  peer,
			}
			for _, label := range []string{"reentrant", "fair"} {
				k := kinds[label]
				t.Run(label, func(t *testing.T) {
					t.Run("Exclude", func(t *testing.T) { e.testExclude(t, k) })
					t.Run("JavaUnlockWakesGo", func(t *testing.T) { e.testJavaWakesGo(t, k) })
					t.Run("GoUnlockWakesJava", func(t *testing.T) { e.testGoWakesJava(t, k) })
				})
			}
		})
	}
}

func (e *nameEnv) java(thread int, op string, k nameKind, name string) peerReq {
	return peerReq{Thread: thread, Op: op, Kind: k.java, Name: name}
}

// goOwner returns a context with a fresh Go owner, and its owner string on
// the mapped Client.
func (e *nameEnv) goOwner(t *testing.T) (context.Context, string) {
	t.Helper()
	ctx := interlock.WithOwner(testCtx(t, time.Minute), interlock.NewOwnerID())
	o, err := e.basic.c.Owner(ctx)
	require.NoError(t, err)
	return ctx, o
}

func (e *nameEnv) exists(t *testing.T, key string) bool {
	t.Helper()
	n, err := e.rc.Do(testCtx(t, 5*time.Second), e.rc.B().Exists().Key(key).Build()).AsInt64()
	require.NoError(t, err)
	return n == 1
}

// Exclude: the plain Go Client's hold on NAME keeps neither mapped side
// out; Java's hold on app:NAME keeps the mapped Go Client out, and the
// reverse.
func (e *nameEnv) testExclude(t *testing.T, k nameKind) {
	name := unique("names-interop-excl")
	t.Cleanup(func() { redistest.DeleteLike([]string{standaloneAddr}, name) })
	ctx, goOwner := e.goOwner(t)
	m, plain := k.New(e.basic.c, name), k.New(e.plain, name)

	require.NoError(t, plain.Lock(ctx))
	assert.True(t, e.peer.Do(t, e.java(1, "tryLockNoWait", k, name)).Bool(t), "Java tryLock() while a plain Go Client holds NAME")
	assert.Equal(t, map[string]string{e.peer.Owner(t, 1): "1"}, e.basic.hash(t, namePrefix+name), "Java's hold is on app:NAME")
	ok, err := m.TryLock(ctx, 0, 0)
	require.NoError(t, err)
	assert.False(t, ok, "mapped Go TryLock while Java holds app:NAME")
	require.NoError(t, plain.Unlock(ctx))
	assert.False(t, e.exists(t, name))
	e.basic.mustDo(t, e.peer, e.java(1, "unlock", k, name))

	require.NoError(t, m.Lock(ctx))
	assert.Equal(t, name, m.Name())
	assert.Equal(t, map[string]string{goOwner: "1"}, e.basic.hash(t, namePrefix+name), "Go's hold is on app:NAME")
	assert.False(t, e.exists(t, name), "nothing on the unmapped key")
	assert.False(t, e.peer.Do(t, e.java(2, "tryLockNoWait", k, name)).Bool(t), "Java tryLock() while mapped Go holds")
	assert.True(t, e.peer.Do(t, e.java(2, "isLocked", k, name)).Bool(t))
	ok, err = plain.TryLock(ctx, 0, 0)
	require.NoError(t, err)
	assert.True(t, ok, "a plain Go Client is not kept out of NAME")
	require.NoError(t, plain.Unlock(ctx))
	require.NoError(t, m.Unlock(ctx))
	assert.False(t, e.peer.Do(t, e.java(2, "isLocked", k, name)).Bool(t))
}

// Java's unlock() wakes a mapped Go Lock.
func (e *nameEnv) testJavaWakesGo(t *testing.T, k nameKind) {
	name := unique("names-interop-wake-go")
	t.Cleanup(func() { redistest.DeleteLike([]string{standaloneAddr}, name) })
	ctx, goOwner := e.goOwner(t)
	m := k.New(e.basic.c, name)

	e.basic.mustDo(t, e.peer, e.java(1, "lock", k, name))
	waiting := make(chan goLocked, 1)
	go func() {
		err := m.Lock(ctx)
		waiting <- goLocked{err: err, at: time.Now()}
	}()
	k.awaitWaiter(t, e, namePrefix+name)
	wch := k.channel(namePrefix+name, goOwner)
	tap := tapChannel(t, standaloneAddr, wch, false)
	basicNotYet(t, waiting, 50*time.Millisecond, "Go Lock while Java holds")
	released := time.Now()
	e.basic.mustDo(t, e.peer, e.java(1, "unlock", k, name))
	d := goWoken(t, waiting, released, "Go Lock")
	assert.Lessf(t, d, nameWakeBound, "Go woken %v after Java's unlock()", d)
	tapNext(t, tap, wch) // Java published the release where the Go waiter listens
	assert.Equal(t, map[string]string{goOwner: "1"}, e.basic.hash(t, namePrefix+name))
	require.NoError(t, m.Unlock(ctx))
}

// The mapped Go Client's Unlock wakes a Java lock().
func (e *nameEnv) testGoWakesJava(t *testing.T, k nameKind) {
	name := unique("names-interop-wake-java")
	t.Cleanup(func() { redistest.DeleteLike([]string{standaloneAddr}, name) })
	ctx, _ := e.goOwner(t)
	m := k.New(e.basic.c, name)

	require.NoError(t, m.Lock(ctx))
	waiting := e.peer.Start(t, e.java(1, "lock", k, name))
	k.awaitWaiter(t, e, namePrefix+name)
	basicNotYet(t, waiting, 50*time.Millisecond, "Java lock() while Go holds")
	released := time.Now()
	require.NoError(t, m.Unlock(ctx))
	d := javaWoken(t, waiting, released, "Java lock()")
	assert.Lessf(t, d, nameWakeBound, "Java woken %v after Go's Unlock", d)
	assert.Equal(t, map[string]string{e.peer.Owner(t, 1): "1"}, e.basic.hash(t, namePrefix+name))
	e.basic.mustDo(t, e.peer, e.java(1, "unlock", k, name))
}
