package renewal_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/renewal"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, redistest.GoleakOptions()...) }

// A kept key outlives its TTL many times over, a deleted one ends its
// context with ErrLost, a released one keeps the TTL it had.
func TestKeeper(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tc := range []struct {
		name  string
		addrs func(t *testing.T) []string
	}{
		{"standalone", func(t *testing.T) []string { return []string{redistest.Standalone(t).Addr()} }},
		{"cluster", func(t *testing.T) []string { return redistest.Cluster(t).Addrs() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := redistest.NewClient(t, tc.addrs(t)...)
			_, err := renewal.NewKeeper(rc, 10*time.Millisecond)
			require.Error(t, err, "a TTL under 30ms")
			_, err = renewal.NewKeeper(nil, time.Second)
			require.Error(t, err)
			const ttl = 300 * time.Millisecond
			k, err := renewal.NewKeeper(rc, ttl)
			require.NoError(t, err)
			defer k.Close()

			_, err = k.Keep(ctx, "absent")
			require.ErrorIs(t, err, renewal.ErrLost)
			_, err = k.Keep(ctx, "")
			require.Error(t, err)

			keys := []string{"a", "b", "c", "d"}
			ctxs := map[string]context.Context{}
			for _, key := range keys {
				require.NoError(t, rc.Do(ctx, rc.B().Set().Key(key).Value("v").Px(ttl).Build()).Error())
				ctxs[key], err = k.Keep(ctx, key)
				require.NoError(t, err)
			}
			time.Sleep(4 * ttl)
			for _, key := range keys {
				n, err := rc.Do(ctx, rc.B().Exists().Key(key).Build()).AsInt64()
				require.NoError(t, err)
				assert.EqualValues(t, 1, n, "%s outlived four TTLs", key)
				assert.NoError(t, ctxs[key].Err())
			}

			require.NoError(t, rc.Do(ctx, rc.B().Del().Key("a").Build()).Error())
			select {
			case <-ctxs["a"].Done():
				assert.ErrorIs(t, context.Cause(ctxs["a"]), renewal.ErrLost)
			case <-time.After(10 * ttl):
				t.Fatal("a deleted key's context did not end")
			}

			k.Release("b")
			assert.ErrorIs(t, context.Cause(ctxs["b"]), context.Canceled, "a release is not a loss")
			require.Eventually(t, func() bool {
				n, err := rc.Do(ctx, rc.B().Exists().Key("b").Build()).AsInt64()
				return err == nil && n == 0
			}, 10*ttl, 10*time.Millisecond, "a released key expires")

			// Keeps count: with two on c, one Release leaves it renewed.
			_, err = k.Keep(ctx, "c")
			require.NoError(t, err)
			k.Release("c")
			time.Sleep(4 * ttl)
			n, err := rc.Do(ctx, rc.B().Exists().Key("c").Build()).AsInt64()
			require.NoError(t, err)
			assert.EqualValues(t, 1, n, "c, kept once more, outlived four TTLs")

			k.Close()
			assert.ErrorIs(t, context.Cause(ctxs["c"]), renewal.ErrClosed)
			_, err = k.Keep(ctx, "d")
			assert.ErrorIs(t, err, renewal.ErrClosed)
		})
	}
}
