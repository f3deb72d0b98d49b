package runtime

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// replicaRecheck is how old a cached replica count may grow before a synced
// call reads it again, in the pipeline of its script (no extra round trip).
// Without it a master seen with no replicas would never be waited for, even
// after replicas joined it, since no WAIT would ever disagree.
const replicaRecheck = 10 * time.Second

// replicaNodesMax bounds the masters remembered before the ones no slot
// points to any more (failed over, restarted) are forgotten.
const replicaNodesMax = 64

// replicaCounts caches the connected_slaves of the masters a Client writes
// to, for replica-sync mode. A master is known by its master_replid, and is
// found through the cluster slot of a script's keys (slot 0 off a cluster),
// so that a count read or invalidated through one slot holds for every slot
// of the same master. The zero value is ready to use.
type replicaCounts struct {
	mu    sync.Mutex
	slots map[uint16]*replicaCount
	nodes map[string]*replicaCount // by master_replid
}

// replicaCount is one master's count.
type replicaCount struct {
	n    int64     // connected_slaves; -1 once a WAIT disagreed with it
	read time.Time // when n was read, or a re-read of it was started
	// aof is aof_enabled:1 in the master's INFO persistence (read only
	// when WAITAOF may be used).
	aof bool
	// waitaof is what a WAITAOF 0 0 0 probe of the master answered: 0 not
	// probed yet, 1 it works, -1 refused (unknown before Redis 7.2, or
	// denied).
	waitaof int8
}

// get returns the count cached for slot's master, or -1 when it must be read
// first, and whether to wait with WAITAOF rather than WAIT. recheck is true
// for one caller per replicaRecheck, who should read it again along with its
// script. With aofCheck, a master with AOF on that was not yet probed for
// WAITAOF must be read first too.
func (c *replicaCounts) get(slot uint16, now time.Time, aofCheck bool) (n int64, aof, recheck bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.slots[slot]
	switch {
	case e == nil || e.n < 0 || (aofCheck && e.aof && e.waitaof == 0):
		return -1, false, false
	case now.Sub(e.read) >= replicaRecheck:
		e.read = now
		recheck = true
	}
	return e.n, aofCheck && e.aof && e.waitaof > 0, recheck
}

// probed records whether slot's master answered a WAITAOF 0 0 0 probe.
func (c *replicaCounts) probed(slot uint16, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.slots[slot]; e != nil {
		e.waitaof = -1
		if ok {
			e.waitaof = 1
		}
	}
}

// learn records an INFO replication answer of slot's master (with its INFO
// persistence, when WAITAOF may be used) and returns its count.
func (c *replicaCounts) learn(slot uint16, info string, now time.Time) (int64, error) {
	n, id, aof, err := parseReplication(info)
	if err != nil {
		return -1, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.slots == nil {
		c.slots, c.nodes = make(map[uint16]*replicaCount), make(map[string]*replicaCount)
	}
	e := c.nodes[id]
	if e == nil {
		e = &replicaCount{}
		if id != "" { // a server without replication ids gets a count per slot
			if len(c.nodes) >= replicaNodesMax {
				c.forgetUnusedLocked()
			}
			c.nodes[id] = e
		}
	}
	e.n, e.read, e.aof = n, now, aof
	c.slots[slot] = e
	return n, nil
}

// stale has the count of slot's master read again before its next use;
// reprobe has it probed for WAITAOF again too.
func (c *replicaCounts) stale(slot uint16, reprobe bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.slots[slot]; e != nil {
		e.n = -1
		if reprobe {
			e.waitaof = 0
		}
	}
}

// due has the count of slot's master re-read along with its next use.
func (c *replicaCounts) due(slot uint16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.slots[slot]; e != nil {
		e.read = time.Time{}
	}
}

// forgetUnusedLocked drops the masters no slot points to.
func (c *replicaCounts) forgetUnusedLocked() {
	used := make(map[*replicaCount]bool, len(c.nodes))
	for _, e := range c.slots {
		used[e] = true
	}
	for id, e := range c.nodes {
		if !used[e] {
			delete(c.nodes, id)
		}
	}
}

// parseReplication reads connected_slaves and master_replid from the text of
// INFO replication ("field:value" lines), and aof_enabled from that of INFO
// persistence when it follows.
func parseReplication(info string) (n int64, id string, aof bool, err error) {
	found := false
	for line := range strings.Lines(info) {
		k, v, ok := strings.Cut(strings.TrimRight(line, "\r\n"), ":")
		if !ok {
			continue
		}
		switch k {
		case "connected_slaves":
			if n, err = strconv.ParseInt(v, 10, 64); err != nil || n < 0 {
				return -1, "", false, fmt.Errorf("INFO replication: bad connected_slaves %q", v)
			}
			found = true
		case "master_replid":
			id = v
		case "aof_enabled":
			aof = v == "1"
		}
	}
	if !found {
		return -1, "", false, errors.New("INFO replication has no connected_slaves")
	}
	return n, id, aof, nil
}
