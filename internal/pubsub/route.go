package pubsub

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/script"
)

// slotCount is the number of hash slots of a Redis Cluster.
const slotCount = 16384

// routeQueryTimeout bounds one CLUSTER SLOTS query to one node.
const routeQueryTimeout = 5 * time.Second

// slotRange is one contiguous range of slots served by one master.
type slotRange struct {
	first, last uint16
	addr        string
}

// routeTable maps cluster slots to master addresses, for sharded channels.
// It is filled from CLUSTER SLOTS and corrected by MOVED replies.
type routeTable struct {
	sem chan struct{} // capacity 1: one topology query at a time

	mu     sync.Mutex
	gen    uint64 // bumped by every successful refresh
	ranges []slotRange
	moved  map[uint16]string // learned from MOVED since the last refresh
}

func newRouteTable() routeTable {
	return routeTable{sem: make(chan struct{}, 1)}
}

// owner returns the master that serves slot, and the table generation.
func (r *routeTable) owner(slot uint16) (addr string, gen uint64, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if addr, ok := r.moved[slot]; ok {
		return addr, r.gen, true
	}
	i, found := slices.BinarySearchFunc(r.ranges, slot, func(sr slotRange, s uint16) int {
		switch {
		case sr.last < s:
			return -1
		case sr.first > s:
			return 1
		}
		return 0
	})
	if !found {
		return "", r.gen, false
	}
	return r.ranges[i].addr, r.gen, true
}

// generation returns the table generation.
func (r *routeTable) generation() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gen
}

// learn records a MOVED redirection.
func (r *routeTable) learn(slot uint16, addr string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.moved == nil {
		r.moved = make(map[uint16]string)
	}
	r.moved[slot] = addr
}

// store replaces the table.
func (r *routeTable) store(ranges []slotRange) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ranges = ranges
	r.moved = nil
	r.gen++
}

// refreshRoutes reads the cluster topology with CLUSTER SLOTS from the first
// node that answers, unless the table changed since generation seen (another
// goroutine refreshed it meanwhile).
func (h *Hub) refreshRoutes(ctx context.Context, seen uint64) error {
	r := &h.routes
	select {
	case r.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-r.sem }()
	if r.generation() != seen {
		return nil
	}

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
			var ranges []slotRange
			if ranges, err = parseClusterSlots(msg, host); err == nil {
				r.store(ranges)
				return nil
			}
		}
		errs = append(errs, fmt.Errorf("%s: %w", addr, err))
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if len(errs) == 0 {
		errs = append(errs, errors.New("the client knows no node"))
	}
	return fmt.Errorf("pubsub: reading the cluster topology: %w", errors.Join(errs...))
}

// parseClusterSlots decodes a CLUSTER SLOTS reply into sorted ranges. An
// empty endpoint means the host of the node that answered (fallbackHost); a
// "?" endpoint is unknown and its ranges are left out. Malformed elements
// are skipped.
func parseClusterSlots(msg rueidis.RedisMessage, fallbackHost string) ([]slotRange, error) {
	items, err := msg.ToArray()
	if err != nil {
		return nil, err
	}
	ranges := make([]slotRange, 0, len(items))
	for _, item := range items {
		fields, err := item.ToArray()
		if err != nil || len(fields) < 3 {
			continue
		}
		first, err1 := fields[0].AsInt64()
		last, err2 := fields[1].AsInt64()
		master, err3 := fields[2].ToArray()
		if err1 != nil || err2 != nil || err3 != nil || len(master) < 2 ||
			first < 0 || last < first || last >= slotCount {
			continue
		}
		host, err1 := master[0].ToString()
		port, err2 := master[1].AsInt64()
		if err1 != nil || err2 != nil || host == "?" || port <= 0 || port > 65535 {
			continue
		}
		if host == "" {
			host = fallbackHost
		}
		ranges = append(ranges, slotRange{
			first: uint16(first),
			last:  uint16(last),
			addr:  net.JoinHostPort(host, strconv.FormatInt(port, 10)),
		})
	}
	if len(ranges) == 0 {
		return nil, errors.New("CLUSTER SLOTS lists no slot")
	}
	slices.SortFunc(ranges, func(a, b slotRange) int { return cmp.Compare(a.first, b.first) })
	return ranges, nil
}
