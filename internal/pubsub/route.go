package pubsub

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/interlock-go/interlock/internal/route"
)

// routeQueryTimeout bounds one CLUSTER SLOTS query to one node.
const routeQueryTimeout = 5 * time.Second

// refreshRoutes reads the cluster topology with CLUSTER SLOTS from the first
// node that answers, unless the table changed since generation seen (another
// goroutine refreshed it meanwhile).
func (h *Hub) refreshRoutes(ctx context.Context, seen uint64) error {
	return h.routes.Refresh(ctx, seen, func(ctx context.Context) ([]route.Range, error) {
		nodes := h.rc.Nodes()
		addrs := make([]string, 0, len(nodes))
		for addr := range nodes {
			addrs = append(addrs, addr)
		}
		rand.Shuffle(len(addrs), func(i, j int) { addrs[i], addrs[j] = addrs[j], addrs[i] })
		var errs []error
		for _, addr := range addrs {
			qctx, cancel := context.WithTimeout(ctx, routeQueryTimeout)
			ranges, err := route.Read(qctx, addr, nodes[addr])
			cancel()
			if err == nil {
				return ranges, nil
			}
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
		}
		if len(errs) == 0 {
			errs = append(errs, errors.New("the client knows no node"))
		}
		return nil, fmt.Errorf("pubsub: reading the cluster topology: %w", errors.Join(errs...))
	})
}
