package pubsub

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"time"

	"github.com/interlock-go/interlock/internal/route"
	"github.com/interlock-go/interlock/internal/script"
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
			n := nodes[addr]
			qctx, cancel := context.WithTimeout(ctx, routeQueryTimeout)
			msg, err := n.Do(qctx, script.Resendable(n.B().ClusterSlots().Build())).ToMessage()
			cancel()
			if err == nil {
				host, _, _ := net.SplitHostPort(addr)
				var ranges []route.Range
				if ranges, err = route.Parse(msg, host); err == nil {
					return ranges, nil
				}
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
