package rwlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/script"
	"github.com/interlock-go/interlock/rwlock"
)

// addr is the package's shared redis-server.
var addr string

func TestMain(m *testing.M) { redistest.Main(m, redistest.ShareServer(&addr)) }

// newClient and wrap return interlock Clients closed when the test ends: on
// the shared server, with the rueidis client under it, or on a rueidis
// client of the test's.
var newClient, wrap = redistest.Clients(&addr, interlock.New)

// lockName returns a key unique to the test.
func lockName(t *testing.T) string { return redistest.Name(t, "rwlock-test:") }

// owner returns ctx acting for a new explicit owner.
func owner(ctx context.Context) context.Context {
	return interlock.WithOwner(ctx, interlock.NewOwnerID())
}

// runs reports whether cmd runs script.
func runs(cmd rueidis.Completed, script *script.Script) bool {
	args := cmd.Commands()
	return len(args) > 1 && args[0] == "EVALSHA" && args[1] == script.SHA1()
}

// hash returns HGETALL key.
func hash(t *testing.T, rc rueidis.Client, key string) map[string]string {
	t.Helper()
	m, err := rc.Do(context.Background(), rc.B().Hgetall().Key(key).Build()).AsStrMap()
	require.NoError(t, err)
	return m
}

// keysLike returns the keys that contain s.
func keysLike(t *testing.T, rc rueidis.Client, s string) []string {
	t.Helper()
	ks, err := rc.Do(context.Background(), rc.B().Keys().Pattern("*"+s+"*").Build()).AsStrSlice()
	require.NoError(t, err)
	return ks
}

// half is what a ReadLock and a WriteLock have in common.
type half interface {
	Lock(context.Context) error
	LockLease(context.Context, time.Duration) error
	TryLock(context.Context, time.Duration, time.Duration) (bool, error)
	Unlock(context.Context) error
	ForceUnlock(context.Context) (bool, error)
	IsLocked(context.Context) (bool, error)
	IsHeld(context.Context) (bool, error)
	HoldCount(context.Context) (int, error)
	TTL(context.Context) (time.Duration, error)
	Guard(context.Context) context.Context
}

var (
	_ half = (*rwlock.ReadLock)(nil)
	_ half = (*rwlock.WriteLock)(nil)
)
