package redistest

import (
	"slices"
	"testing"

	"github.com/redis/rueidis"
)

// NewClient returns a rueidis client with default options for addrs, closed
// by tb.Cleanup. Given the addresses of cluster nodes, rueidis detects the
// cluster and routes by slot; so does it given a single cluster node. It fails
// tb if it cannot connect.
func NewClient(tb testing.TB, addrs ...string) rueidis.Client {
	tb.Helper()
	if len(addrs) == 0 {
		tb.Fatal("redistest: NewClient needs at least one address")
	}
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: slices.Clone(addrs)})
	if err != nil {
		tb.Fatalf("redistest: connecting to %v: %v", addrs, err)
	}
	tb.Cleanup(c.Close)
	return c
}
