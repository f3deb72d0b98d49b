package pubsub

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/redistest"
)

// The package's shared servers, started once by TestMain. Tests that share
// them use channel names of their own (see chanName) and never kill, pause
// or restart them; a test that does starts its own with redistest.Standalone.
var (
	// sharedServer is a plain redis-server.
	sharedServer *redistest.Server
	// sharedCluster is a three-master Redis Cluster. Starting one takes a
	// few seconds, which each cluster test would otherwise pay.
	sharedCluster *redistest.ClusterServers
)

func TestMain(m *testing.M) {
	redistest.Main(m, func() (func(), error) {
		var err error
		if sharedServer, err = redistest.Start(); err != nil {
			return nil, err
		}
		if sharedCluster, err = redistest.StartCluster(); err != nil {
			return sharedServer.Stop, err
		}
		return func() {
			sharedCluster.Stop()
			sharedServer.Stop()
		}, nil
	})
}

// do runs an arbitrary command.
func do(t *testing.T, rc rueidis.Client, args ...string) rueidis.RedisResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return rc.Do(ctx, rc.B().Arbitrary(args...).Build())
}
