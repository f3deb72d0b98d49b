package conformance_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fenced"
	"github.com/interlock-go/interlock/internal/keys"
)

// fuzzDB is the database the fuzz test works in, alone: whatever is in it
// afterwards was written for the fuzzed name.
const fuzzDB = 9

// A life is how a lock of one kind lives under the fuzzed name: an owner
// takes lock with a single attempt, a second owner then tries rival (which
// subscribes to the derived channel, or, for a fair kind, queues and leaves
// the queue when its wait runs out) and is refused, and the owner unlocks.
type life struct {
	kind string
	// lock is the lock the owner takes; rival the one the second owner
	// tries: the same lock when nil, or the other half of a read/write
	// lock.
	lock, rival func(c *interlock.Client, name string) interlock.Locker
	// acquire is the owner's single attempt: TryLock when nil.
	acquire func(t *testing.T, ctx context.Context, l interlock.Locker) (bool, error)
	// kept returns the keys that outlive the hold (the fenced token
	// counter); none when nil.
	kept func(name string) []string
	// held checks the database's keys while the lock is held; when nil,
	// they must be the lock's key and the kept ones.
	held func(t *testing.T, name string, ks []string)
}

// lives are every lock kind's, the read/write lock's two halves each
// refusing an owner of the other.
var lives = []life{
	{kind: "rlock", lock: rlockKind.New},
	{kind: "fairlock", lock: fairKind.New},
	{kind: "fenced", lock: fencedKind.New, kept: fencedKind.Kept, acquire: fencedAcquire},
	{kind: "spin", lock: spinKind.New},
	{kind: "nonreentrant", lock: nonReentrantKind.New},
	{kind: "nonreentrant fair", lock: nonReentrantFairKind.New},
	{kind: "rwlock write", lock: writeHalf, rival: readHalf},
	{kind: "rwlock read", lock: readHalf, rival: writeHalf, held: readerKeys},
}

// fencedAcquire takes a fenced lock with TryLockToken: a fresh counter
// hands out token 1, a refused name none.
func fencedAcquire(t *testing.T, ctx context.Context, l interlock.Locker) (bool, error) {
	token, ok, err := l.(*fenced.Mutex).TryLockToken(ctx, 0, 0)
	if ok {
		require.Equal(t, uint64(1), token, "a fresh counter")
	} else {
		require.Zero(t, token)
	}
	return ok, err
}

// readerKeys checks the keys of a read hold: the lock's hash and its
// reader's timeout key, all in the lock's slot.
func readerKeys(t *testing.T, name string, ks []string) {
	require.Len(t, ks, 2, "the hash and one reader timeout key: %q", ks)
	prefix := strings.TrimSuffix(keys.Suffix(name, ""), ":") + ":"
	for _, k := range ks {
		require.True(t, k == name || (strings.HasPrefix(k, prefix) && strings.HasSuffix(k, ":rwlock_timeout:1")),
			"a key that is not the lock's: %q", k)
		require.Equal(t, keys.Slot(name), keys.Slot(k), "key %q", k)
	}
}

// FuzzLockName runs the life of a lock of every kind under any name
// against the real server: a name keys.Check refuses fails every operation
// with interlock.ErrInvalid before anything is sent; any other name locks,
// refuses a second owner and unlocks, touching no key but the lock's own.
func FuzzLockName(f *testing.F) {
	for _, s := range []string{
		"", "a", "orders:42", "{", "}", "{}", "{{", "}}", "}{", "{a}", "a{b}c", "a{b", "{}x", "x}y", "x{}",
		"{a}{b}", "{{a}}", "a\x00b", "\xff\xfe", "日本語", "\r\n", "*", "?[a]", strings.Repeat("k", 1<<16),
	} {
		f.Add(s)
	}
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, SelectDB: fuzzDB, ForceSingleClient: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(rc.Close)
	c, err := interlock.New(rc)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = c.Close() })
	dbKeys := func(t *testing.T) []string {
		ks, err := rc.Do(context.Background(), rc.B().Keys().Pattern("*").Build()).AsStrSlice()
		require.NoError(t, err)
		slices.Sort(ks)
		return ks
	}

	f.Fuzz(func(t *testing.T, name string) {
		for _, l := range lives {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			require.NoError(t, rc.Do(ctx, rc.B().Flushdb().Build()).Error())
			l.live(t, ctx, c, name, dbKeys)
			cancel()
		}
	})
}

// live runs l's life under name on c, whose database dbKeys lists.
func (l life) live(t *testing.T, ctx context.Context, c *interlock.Client, name string, dbKeys func(*testing.T) []string) {
	m := l.lock(c, name)
	rival := m
	if l.rival != nil {
		rival = l.rival(c, name)
	}
	var ok bool
	var err error
	if l.acquire != nil {
		ok, err = l.acquire(t, ctx, m)
	} else {
		ok, err = m.TryLock(ctx, 0, 0)
	}
	if keys.Check(name) != nil {
		require.ErrorIs(t, err, interlock.ErrInvalid, l.kind)
		require.False(t, ok, l.kind)
		for _, x := range slices.Compact([]interlock.Locker{m, rival}) {
			require.ErrorIs(t, x.Lock(ctx), interlock.ErrInvalid, l.kind)
			require.ErrorIs(t, x.Unlock(ctx), interlock.ErrInvalid, l.kind)
			_, err = x.ForceUnlock(ctx)
			require.ErrorIs(t, err, interlock.ErrInvalid, l.kind)
			_, err = x.IsLocked(ctx)
			require.ErrorIs(t, err, interlock.ErrInvalid, l.kind)
		}
		require.Empty(t, dbKeys(t), "%s: nothing was sent", l.kind)
		return
	}
	require.NoError(t, err, l.kind)
	require.True(t, ok, l.kind)
	ok, err = rival.TryLock(interlock.WithOwner(ctx, interlock.NewOwnerID()), 5*time.Millisecond, 0)
	require.NoError(t, err, l.kind)
	require.False(t, ok, "%s: a second owner", l.kind)
	var kept []string
	if l.kept != nil {
		kept = l.kept(name)
	}
	if l.held != nil {
		l.held(t, name, dbKeys(t))
	} else {
		want := append([]string{name}, kept...)
		slices.Sort(want)
		require.Equal(t, want, dbKeys(t), "%s: the lock's keys (a queued owner left the queue)", l.kind)
	}
	n, err := m.HoldCount(ctx)
	require.NoError(t, err, l.kind)
	require.Equal(t, 1, n, l.kind)
	require.NoError(t, m.Unlock(ctx), l.kind)
	require.Eventually(t, func() bool { return slices.Equal(dbKeys(t), kept) }, 5*time.Second, time.Millisecond,
		"%s: the unlock latch (and a reader's timeout key) is deleted; kept keys stay", l.kind)
}
