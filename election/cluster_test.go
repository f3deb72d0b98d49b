package election_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/election"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
)

// TestCluster runs an election on a three-master cluster: the value key
// and the channels share the lock's slot, the watchdog renews the value
// key there, the release (SPUBLISH on Redis 7) wakes the candidate of
// another Client, and observers see both terms.
func TestCluster(t *testing.T) {
	cl := redistest.Cluster(t)
	rc := cl.Client(t)
	ctx := redistest.Context(t)
	open := func() *interlock.Client {
		c, err := interlock.New(rc, interlock.WithWatchdogTimeout(time.Second))
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	a, b := open(), open()
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	for _, name := range []string{"{election-" + suffix + "}:leader"} {
		t.Run(name, func(t *testing.T) {
			value := keys.LeaderValue(name)
			t.Cleanup(func() {
				for _, k := range []string{name, keys.Prefix(keys.FenceTokenPrefix, name), value} {
					rc.Do(context.Background(), rc.B().Del().Key(k).Build())
				}
			})
			require.Equal(t, keys.Slot(name), keys.Slot(value))
			require.Equal(t, keys.Slot(name), keys.Slot(keys.LeaderChannel(name)))

			ea, eb := election.New(a, name), election.New(b, name, election.WithRecheck(time.Minute))
			octx, stop := context.WithCancel(ctx)
			defer stop()
			seen := eb.Observe(octx)
			la, err := ea.Campaign(ctx, "a")
			require.NoError(t, err)
			assert.Equal(t, "a", next(t, seen).Value)
			time.Sleep(1200 * time.Millisecond) // renewals past the watchdog timeout
			ttl, err := rc.Do(ctx, rc.B().Pttl().Key(value).Build()).AsInt64()
			require.NoError(t, err)
			assert.Positive(t, ttl)

			led := make(chan error, 1)
			go func() {
				_, err := eb.Campaign(ctx, "b")
				led <- err
			}()
			time.Sleep(100 * time.Millisecond)
			require.NoError(t, ea.Resign(ctx))
			select {
			case err := <-led:
				require.NoError(t, err)
			case <-time.After(redistest.Prompt):
				t.Fatal("the release did not wake the other Client's candidate")
			}
			ld := next(t, seen)
			assert.Equal(t, "b", ld.Value)
			assert.Equal(t, la.Token()+1, ld.Token)
			require.NoError(t, eb.Resign(ctx))
		})
	}
}
