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
// to to, with the commands redis-cli --cluster reshard uses, but each step
// pipelined over all the slots at once: SETSLOT IMPORTING on to, SETSLOT
// MIGRATING on from, MIGRATE of the keys in batches of 100, then SETSLOT
// NODE on to, from and the other masters. Clients see ASK (and TRYAGAIN
// for multi-key commands) and then MOVED redirections meanwhile. It returns once every node agrees on
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
	if err := m.moveSlots(ctx, moving, fi, ti); err != nil {
		return fmt.Errorf("redistest: Reshard: from %s to %s: %w%s", from.addr, to.addr, err, logTails(from, to))
	}
	err = c.waitStable(ctx, func(t *topology) error {
		for _, slot := range moving {
			if int(t.owner[slot]) != ti {
				return fmt.Errorf("slot %d is still served by %s", slot, c.nodes[t.owner[slot]].addr)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w%s", err, logTails(from, to))
	}
	return nil
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

// moveSlots moves slots and their keys from master fi to master ti. Each
// step is pipelined over all the slots: all are marked importing on ti and
// migrating on fi, their keys are moved until none are left, and then every
// master is told the new owner, ti first, so that it serves the slots before
// fi sends MOVED there.
func (m *masterConns) moveSlots(ctx context.Context, slots []int, fi, ti int) error {
	from, to := m.conns[fi], m.conns[ti]
	each := func(args ...string) [][]string {
		cmds := make([][]string, len(slots))
		for i, slot := range slots {
			cmds[i] = slices.Concat([]string{"CLUSTER", "SETSLOT", strconv.Itoa(slot)}, args)
		}
		return cmds
	}
	if err := expectAllOK(to.pipeline(ctx, each("IMPORTING", m.ids[fi]))); err != nil {
		return err
	}
	if err := expectAllOK(from.pipeline(ctx, each("MIGRATING", m.ids[ti]))); err != nil {
		return err
	}
	port := strconv.Itoa(m.c.nodes[ti].port)
	for pending := slots; len(pending) > 0; {
		cmds := make([][]string, len(pending))
		for i, slot := range pending {
			cmds[i] = []string{"CLUSTER", "GETKEYSINSLOT", strconv.Itoa(slot), strconv.Itoa(reshardBatch)}
		}
		replies, err := from.pipeline(ctx, cmds)
		if err != nil {
			return err
		}
		var migrate [][]string
		var next []int
		for i, reply := range replies {
			list, ok := reply.([]any)
			if !ok {
				return fmt.Errorf("%s: CLUSTER GETKEYSINSLOT %d answered %v", from.addr, pending[i], reply)
			}
			if len(list) == 0 {
				continue
			}
			args := []string{"MIGRATE", "127.0.0.1", port, "", "0", "5000", "REPLACE", "KEYS"}
			for _, k := range list {
				key, ok := k.(string)
				if !ok {
					return fmt.Errorf("%s: CLUSTER GETKEYSINSLOT %d answered %v", from.addr, pending[i], reply)
				}
				args = append(args, key)
			}
			migrate = append(migrate, args)
			next = append(next, pending[i])
		}
		if err := expectAllOK(from.pipeline(ctx, migrate)); err != nil {
			return err
		}
		pending = next // look again: a slot may have had more keys than a batch
	}
	order := []int{ti, fi}
	for i := range m.conns {
		if i != ti && i != fi {
			order = append(order, i)
		}
	}
	for _, i := range order {
		if err := expectAllOK(m.conns[i].pipeline(ctx, each("NODE", m.ids[ti]))); err != nil {
			return err
		}
	}
	return nil
}

// expectAllOK turns the first reply other than OK into an error.
func expectAllOK(replies []any, err error) error {
	if err != nil {
		return err
	}
	for _, r := range replies {
		if err, ok := r.(error); ok {
			return err
		}
		if r != "OK" {
			return errors.New("unexpected reply " + fmt.Sprint(r))
		}
	}
	return nil
}

// close closes every connection.
func (m *masterConns) close() {
	for _, c := range m.conns {
		c.close()
	}
}
