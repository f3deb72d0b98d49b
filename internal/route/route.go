// Package route knows which master of a Redis Cluster serves a hash slot:
// a table read from CLUSTER SLOTS and corrected by MOVED replies, for the
// parts of the engine that pick a node's connection themselves (sharded
// pub/sub, the renewal rounds and latch sweeps).
package route

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

// Slots is the number of hash slots of a Redis Cluster.
const Slots = 16384

// Range is one contiguous range of slots served by one master.
type Range struct {
	First, Last uint16
	Addr        string
}

// Table maps slots to master addresses. The zero Table knows none and is
// ready to use.
type Table struct {
	once sync.Once
	sem  chan struct{} // capacity 1: one topology query at a time

	mu     sync.Mutex
	gen    uint64 // bumped by every Store
	ranges []Range
	moved  map[uint16]string // learnt from MOVED since the last Store
}

// Master returns the master that serves slot, and the table generation.
func (t *Table) Master(slot uint16) (addr string, gen uint64, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if addr, ok := t.moved[slot]; ok {
		return addr, t.gen, true
	}
	i, found := slices.BinarySearchFunc(t.ranges, slot, func(r Range, s uint16) int {
		switch {
		case r.Last < s:
			return -1
		case r.First > s:
			return 1
		}
		return 0
	})
	if !found {
		return "", t.gen, false
	}
	return t.ranges[i].Addr, t.gen, true
}

// Masters returns the addresses of the masters the table knows.
func (t *Table) Masters() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var addrs []string
	for _, r := range t.ranges {
		if !slices.Contains(addrs, r.Addr) {
			addrs = append(addrs, r.Addr)
		}
	}
	for _, addr := range t.moved {
		if !slices.Contains(addrs, addr) {
			addrs = append(addrs, addr)
		}
	}
	return addrs
}

// Generation returns the table generation.
func (t *Table) Generation() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.gen
}

// Learn records a MOVED redirection of slot to addr.
func (t *Table) Learn(slot uint16, addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.moved == nil {
		t.moved = make(map[uint16]string)
	}
	t.moved[slot] = addr
}

// Store replaces the table.
func (t *Table) Store(ranges []Range) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ranges = ranges
	t.moved = nil
	t.gen++
}

// Refresh stores what query reads, unless the table changed since
// generation seen (another caller refreshed it meanwhile). One query runs
// at a time; a caller waits for its turn until ctx ends.
func (t *Table) Refresh(ctx context.Context, seen uint64, query func(context.Context) ([]Range, error)) error {
	t.once.Do(func() { t.sem = make(chan struct{}, 1) })
	select {
	case t.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-t.sem }()
	if t.Generation() != seen {
		return nil
	}
	ranges, err := query(ctx)
	if err != nil {
		return err
	}
	t.Store(ranges)
	return nil
}

// Read asks c, a client of the node at addr, for CLUSTER SLOTS, and
// returns the ranges it answered.
func Read(ctx context.Context, addr string, c rueidis.CoreClient) ([]Range, error) {
	msg, err := c.Do(ctx, script.Resendable(c.B().ClusterSlots().Build())).ToMessage()
	if err != nil {
		return nil, err
	}
	host, _, _ := net.SplitHostPort(addr)
	return Parse(msg, host)
}

// ReadAny reads the table from nodes, in random order, until one answers,
// each read bound by timeout. via gives the connection a read of a node
// goes on, and what to call once it is done.
func ReadAny(ctx context.Context, nodes map[string]rueidis.Client, timeout time.Duration, via func(rueidis.Client) (rueidis.CoreClient, func())) ([]Range, error) {
	addrs := make([]string, 0, len(nodes))
	for addr := range nodes {
		addrs = append(addrs, addr)
	}
	rand.Shuffle(len(addrs), func(i, j int) { addrs[i], addrs[j] = addrs[j], addrs[i] })
	var errs []error
	for _, addr := range addrs {
		c, done := via(nodes[addr])
		rctx, cancel := context.WithTimeout(ctx, timeout)
		ranges, err := Read(rctx, addr, c)
		cancel()
		done()
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
	return nil, errors.Join(errs...)
}

// Parse decodes a CLUSTER SLOTS reply into ranges sorted by slot. An
// empty endpoint means the host of the node that answered (fallbackHost);
// a "?" endpoint is unknown and its ranges are left out. Malformed
// elements are skipped.
func Parse(msg rueidis.RedisMessage, fallbackHost string) ([]Range, error) {
	items, err := msg.ToArray()
	if err != nil {
		return nil, err
	}
	ranges := make([]Range, 0, len(items))
	for _, item := range items {
		fields, err := item.ToArray()
		if err != nil || len(fields) < 3 {
			continue
		}
		first, err1 := fields[0].AsInt64()
		last, err2 := fields[1].AsInt64()
		master, err3 := fields[2].ToArray()
		if err1 != nil || err2 != nil || err3 != nil || len(master) < 2 ||
			first < 0 || last < first || last >= Slots {
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
		ranges = append(ranges, Range{
			First: uint16(first),
			Last:  uint16(last),
			Addr:  net.JoinHostPort(host, strconv.FormatInt(port, 10)),
		})
	}
	if len(ranges) == 0 {
		return nil, errors.New("CLUSTER SLOTS lists no slot")
	}
	slices.SortFunc(ranges, func(a, b Range) int { return cmp.Compare(a.First, b.First) })
	return ranges, nil
}
