package rwlock_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/rwlock"
)

// fuzzDB is the database the fuzz test works in, alone: whatever is in it
// afterwards was written for the fuzzed name.
const fuzzDB = 9

// FuzzLockName runs both halves of a read/write lock under any name
// against the real server: a name keys.Check refuses fails every operation
// with interlock.ErrInvalid before anything is sent; any other name takes
// the write lock and then the read lock, each refusing an owner of the
// other half (which subscribes to the derived channel), and releases them,
// touching no key but the lock's own: its hash and its readers' timeout
// keys, all in its slot.
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
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, rc.Do(ctx, rc.B().Flushdb().Build()).Error())
		m := rwlock.New(c, name)
		ok, err := m.Write().TryLock(ctx, 0, 0)
		if keys.Check(name) != nil {
			require.ErrorIs(t, err, interlock.ErrInvalid)
			require.False(t, ok)
			ok, err = m.Read().TryLock(ctx, 0, 0)
			require.ErrorIs(t, err, interlock.ErrInvalid)
			require.False(t, ok)
			require.ErrorIs(t, m.Read().Unlock(ctx), interlock.ErrInvalid)
			require.ErrorIs(t, m.Write().Unlock(ctx), interlock.ErrInvalid)
			_, err = m.Write().ForceUnlock(ctx)
			require.ErrorIs(t, err, interlock.ErrInvalid)
			_, err = m.Read().IsLocked(ctx)
			require.ErrorIs(t, err, interlock.ErrInvalid)
			require.Empty(t, dbKeys(t), "nothing was sent")
			return
		}
		other := interlock.WithOwner(ctx, interlock.NewOwnerID())

		require.NoError(t, err)
		require.True(t, ok, "write lock")
		ok, err = m.Read().TryLock(other, 5*time.Millisecond, 0)
		require.NoError(t, err)
		require.False(t, ok, "a reader while another owner writes")
		require.Equal(t, []string{name}, dbKeys(t))
		require.NoError(t, m.Write().Unlock(ctx))
		require.Eventually(t, func() bool { return len(dbKeys(t)) == 0 }, 5*time.Second, time.Millisecond,
			"the unlock latch is deleted")

		ok, err = m.Read().TryLock(ctx, 0, 0)
		require.NoError(t, err)
		require.True(t, ok, "read lock")
		ok, err = m.Write().TryLock(other, 5*time.Millisecond, 0)
		require.NoError(t, err)
		require.False(t, ok, "a writer while another owner reads")
		ks := dbKeys(t)
		require.Len(t, ks, 2, "the hash and one reader timeout key: %q", ks)
		prefix := strings.TrimSuffix(keys.Suffix(name, ""), ":") + ":"
		for _, k := range ks {
			require.True(t, k == name || (strings.HasPrefix(k, prefix) && strings.HasSuffix(k, ":rwlock_timeout:1")),
				"a key that is not the lock's: %q", k)
			require.Equal(t, keys.Slot(name), keys.Slot(k), "key %q", k)
		}
		require.NoError(t, m.Read().Unlock(ctx))
		require.Eventually(t, func() bool { return len(dbKeys(t)) == 0 }, 5*time.Second, time.Millisecond,
			"the timeout key and the unlock latch are deleted")
	})
}
