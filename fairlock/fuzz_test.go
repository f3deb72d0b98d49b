package fairlock_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/internal/keys"
)

// fuzzDB is the database the fuzz test works in, alone: whatever is in it
// afterwards was written for the fuzzed name.
const fuzzDB = 9

// FuzzLockName runs a lock's whole life under any name against the real
// server: a name keys.Check refuses fails every operation with
// interlock.ErrInvalid before anything is sent; any other name locks,
// refuses a second owner (which subscribes to the derived channel), and
// unlocks, touching no key but its own. The second owner queues, and
// leaves the queue when its wait runs out.
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
		m := fairlock.New(c, name)
		ok, err := m.TryLock(ctx, 0, 0)
		if keys.Check(name) != nil {
			require.ErrorIs(t, err, interlock.ErrInvalid)
			require.False(t, ok)
			require.ErrorIs(t, m.Lock(ctx), interlock.ErrInvalid)
			require.ErrorIs(t, m.Unlock(ctx), interlock.ErrInvalid)
			_, err = m.ForceUnlock(ctx)
			require.ErrorIs(t, err, interlock.ErrInvalid)
			_, err = m.IsLocked(ctx)
			require.ErrorIs(t, err, interlock.ErrInvalid)
			require.Empty(t, dbKeys(t), "nothing was sent")
			return
		}
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = m.TryLock(interlock.WithOwner(ctx, interlock.NewOwnerID()), 5*time.Millisecond, 0)
		require.NoError(t, err)
		require.False(t, ok, "a second owner")
		require.Equal(t, []string{name}, dbKeys(t), "the second owner left the queue")
		n, err := m.HoldCount(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.NoError(t, m.Unlock(ctx))
		require.Eventually(t, func() bool { return len(dbKeys(t)) == 0 }, 5*time.Second, time.Millisecond,
			"the unlock latch is deleted")
	})
}
