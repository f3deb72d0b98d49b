package fairlock_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/script"
)

// addr is the package's shared redis-server.
var addr string

func TestMain(m *testing.M) {
	// A worker process (see fairness_test.go) runs its part and exits
	// before any server is started or any test runs.
	if os.Getenv(envWorker) != "" {
		os.Exit(runWorker())
	}
	redistest.Main(m, redistest.ShareServer(&addr))
}

// newClient and wrap return interlock Clients closed when the test ends: on
// the shared server, with the rueidis client under it, or on a rueidis
// client of the test's.
var newClient, wrap = redistest.Clients(&addr, interlock.New)

// lockName returns a key unique to the test.
func lockName(t testing.TB) string { return redistest.Name(t, "fairlock-test:") }

// queueOf and timeoutsOf are the lock's waiter keys.
func queueOf(name string) string    { return keys.Prefix("redisson_lock_queue", name) }
func timeoutsOf(name string) string { return keys.Prefix("redisson_lock_timeout", name) }

// queue returns the owners queued for the lock, in order.
func queue(t *testing.T, rc rueidis.Client, name string) []string {
	t.Helper()
	q, err := rc.Do(context.Background(), rc.B().Lrange().Key(queueOf(name)).Start(0).Stop(-1).Build()).AsStrSlice()
	require.NoError(t, err)
	return q
}

// deadlines returns the waiters' deadlines, epoch ms by owner.
func deadlines(t *testing.T, rc rueidis.Client, name string) map[string]int64 {
	t.Helper()
	zs, err := rc.Do(context.Background(), rc.B().Zrange().Key(timeoutsOf(name)).Min("0").Max("-1").Withscores().Build()).AsZScores()
	require.NoError(t, err)
	out := make(map[string]int64, len(zs))
	for _, z := range zs {
		out[z.Member] = int64(z.Score)
	}
	return out
}

// waitQueued waits until the lock's queue has n owners and returns them.
func waitQueued(t *testing.T, rc rueidis.Client, name string, n int) []string {
	t.Helper()
	var q []string
	redistest.Eventually(t, 10*time.Second, func() bool {
		q = queue(t, rc, name)
		return len(q) == n
	}, "queue length")
	return q
}

// leftOver returns every key whose name contains name.
func leftOver(t *testing.T, rc rueidis.Client, name string) []string {
	t.Helper()
	ks, err := rc.Do(context.Background(), rc.B().Keys().Pattern("*"+name+"*").Build()).AsStrSlice()
	require.NoError(t, err)
	return ks
}

// nothingLeft asserts that no key and no subscription of the lock remain.
func nothingLeft(t *testing.T, c *interlock.Client, rc rueidis.Client, name string) {
	t.Helper()
	redistest.Eventually(t, 3*time.Second, func() bool {
		chans, err := rc.Do(context.Background(), rc.B().PubsubChannels().Pattern("*"+name+"*").Build()).AsStrSlice()
		return err == nil && len(chans) == 0 && c.Stats().Channels == 0 && len(leftOver(t, rc, name)) == 0
	}, "keys or subscriptions left behind")
}

// runs reports whether cmd runs script, and returns a copy of its ARGV
// (rueidis recycles a command once it was sent).
func runs(cmd rueidis.Completed, script *script.Script) ([]string, bool) {
	args := cmd.Commands()
	if len(args) < 3 || args[0] != "EVALSHA" || args[1] != script.SHA1() {
		return nil, false
	}
	nk := 0
	for _, c := range args[2] {
		nk = nk*10 + int(c-'0')
	}
	return slices.Clone(args[3+nk:]), true
}
