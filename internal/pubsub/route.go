package pubsub

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/route"
)

// routeQueryTimeout bounds one CLUSTER SLOTS query to one node.
const routeQueryTimeout = 5 * time.Second

// refreshRoutes reads the cluster topology with CLUSTER SLOTS from the first
// node that answers, unless the table changed since generation seen (another
// goroutine refreshed it meanwhile).
func (h *Hub) refreshRoutes(ctx context.Context, seen uint64) error {
	return h.routes.Refresh(ctx, seen, func(ctx context.Context) ([]route.Range, error) {
		ranges, err := route.ReadAny(ctx, h.rc.Nodes(), routeQueryTimeout, func(n rueidis.Client) (rueidis.CoreClient, func()) {
			return n, func() {}
		})
		if err != nil {
			return nil, fmt.Errorf("pubsub: reading the cluster topology: %w", err)
		}
		return ranges, nil
	})
}
