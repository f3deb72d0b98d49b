package redistest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
)

// reshardBatch is how many keys Reshard moves with one MIGRATE.
const reshardBatch = 100

// Reshard moves the lowest `slots` slots that from owns, with their keys,
// to to, as redis-cli --cluster reshard does: for each slot, SETSLOT
// IMPORTING on to and MIGRATING on from, MIGRATE of its keys in batches,
// then SETSLOT NODE on to, from and the other masters. Clients see ASK and
// then MOVED redirections meanwhile. It returns once every node agrees on
// the new owners and no slot is in migration (replicas learn of the change
// by gossip, within a few seconds), and NodeForSlot follows. from and to
// must be masters; from must keep at least one slot. It gives up with an
// error when ctx ends or after 30 s, possibly leaving a slot in migration.
func (c *ClusterServers) Reshard(ctx context.Context, from, to *Server, slots int) error {
	c.op.Lock()
	defer c.op.Unlock()
	fi, ti := slices.Index(c.nodes, from), slices.Index(c.nodes, to)
	c.mu.RLock()
	topo := c.topo
	c.mu.RUnlock()
	switch {
	case fi < 0 || ti < 0:
		return fmt.Errorf("redistest: Reshard: %s and %s must be nodes of cluster %v", nodeName(from), nodeName(to), c.Addrs())
	case fi == ti:
		return fmt.Errorf("redistest: Reshard: from and to are both %s", from.addr)
	case topo.master[fi] >= 0 || topo.master[ti] >= 0:
		return fmt.Errorf("redistest: Reshard: %s and %s must both be masters", from.addr, to.addr)
	}
	var moving []int
	owned := 0
	for slot, o := range topo.owner {
		if int(o) == fi {
			owned++
			if len(moving) < slots {
				moving = append(moving, slot)
			}
		}
	}
	if slots < 1 || slots >= owned {
		return fmt.Errorf("redistest: Reshard: cannot move %d of the %d slots of %s (from 1 to %d)", slots, owned, from.addr, owned-1)
	}

	ctx, cancel := context.WithTimeout(ctx, clusterTimeout)
	defer cancel()
	m, err := c.dialMasters(ctx, topo)
	if err != nil {
		return err
	}
	defer m.close()
	for _, slot := range moving {
		if err := m.moveSlot(ctx, slot, fi, ti); err != nil {
			return fmt.Errorf("redistest: Reshard: slot %d from %s to %s: %w%s", slot, from.addr, to.addr, err, logTails(from, to))
		}
	}
	return c.waitStable(ctx, func(t *topology) error {
		for _, slot := range moving {
			if int(t.owner[slot]) != ti {
				return fmt.Errorf("slot %d is still served by %s", slot, c.nodes[t.owner[slot]].addr)
			}
		}
		return nil
	})
}

// masterConns are connections to every master of a cluster, with their
// node ids, indexed as ClusterServers.nodes.
type masterConns struct {
	c     *ClusterServers
	conns map[int]*nodeConn
	ids   map[int]string
}

// dialMasters connects to every master of t and asks it for its node id.
func (c *ClusterServers) dialMasters(ctx context.Context, t topology) (*masterConns, error) {
	m := &masterConns{c: c, conns: map[int]*nodeConn{}, ids: map[int]string{}}
	for i, mi := range t.master {
		if mi >= 0 {
			continue
		}
		conn, err := dialNode(ctx, c.nodes[i].addr)
		if err != nil {
			m.close()
			return nil, fmt.Errorf("redistest: Reshard: %s: %w", c.nodes[i].addr, err)
		}
		m.conns[i] = conn
		id, err := conn.do(ctx, "CLUSTER", "MYID")
		if s, ok := id.(string); err == nil && (!ok || s == "") {
			err = fmt.Errorf("CLUSTER MYID answered %v", id)
		}
		if err != nil {
			m.close()
			return nil, fmt.Errorf("redistest: Reshard: %w", err)
		}
		m.ids[i] = id.(string)
	}
	return m, nil
}

// moveSlot moves one slot and its keys from master fi to master ti.
func (m *masterConns) moveSlot(ctx context.Context, slot, fi, ti int) error {
	s := strconv.Itoa(slot)
	from, to := m.conns[fi], m.conns[ti]
	if err := expectOK(to.do(ctx, "CLUSTER", "SETSLOT", s, "IMPORTING", m.ids[fi])); err != nil {
		return err
	}
	if err := expectOK(from.do(ctx, "CLUSTER", "SETSLOT", s, "MIGRATING", m.ids[ti])); err != nil {
		return err
	}
	port := strconv.Itoa(m.c.nodes[ti].port)
	for {
		reply, err := from.do(ctx, "CLUSTER", "GETKEYSINSLOT", s, strconv.Itoa(reshardBatch))
		if err != nil {
			return err
		}
		list, ok := reply.([]any)
		if !ok {
			return fmt.Errorf("%s: CLUSTER GETKEYSINSLOT answered %v", from.addr, reply)
		}
		if len(list) == 0 {
			break
		}
		args := []string{"MIGRATE", "127.0.0.1", port, "", "0", "5000", "REPLACE", "KEYS"}
		for _, k := range list {
			key, ok := k.(string)
			if !ok {
				return fmt.Errorf("%s: CLUSTER GETKEYSINSLOT answered %v", from.addr, reply)
			}
			args = append(args, key)
		}
		if err := expectOK(from.do(ctx, args...)); err != nil {
			return err
		}
	}
	// The importing node first, so that it serves the slot before the
	// source sends MOVED there; then the source; then everyone else.
	order := []int{ti, fi}
	for i := range m.conns {
		if i != ti && i != fi {
			order = append(order, i)
		}
	}
	for _, i := range order {
		if err := expectOK(m.conns[i].do(ctx, "CLUSTER", "SETSLOT", s, "NODE", m.ids[ti])); err != nil {
			return err
		}
	}
	return nil
}

// expectOK turns a reply other than OK into an error.
func expectOK(reply any, err error) error {
	if err != nil {
		return err
	}
	if reply != "OK" {
		return errors.New("unexpected reply " + fmt.Sprint(reply))
	}
	return nil
}

// close closes every connection.
func (m *masterConns) close() {
	for _, c := range m.conns {
		c.close()
	}
}
