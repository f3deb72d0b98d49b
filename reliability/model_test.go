package reliability

// The reference model of T15: what a read/write lock's keys hold on the
// server (docs/protocol.md, "Read/write lock"), and what one Client
// records locally about its owners' holds, which decides ErrUpgrade.

import (
	"fmt"
	"strconv"
)

// t15MaxK bounds the timeout-key indexes compared (reentrancy is at most 3).
const t15MaxK = 4

// t15Model is the server state of one read/write lock plus the local
// records of its owners.
type t15Model struct {
	mode   string           // "", "read" or "write"
	reads  map[string]int   // owner -> read count (hash field O)
	writes map[string]int   // owner -> write count (hash field O:write)
	alive  map[t15Hold]bool // read-hold timeout keys that exist
	local  map[string]*t15Local
}

// t15Hold names read hold k of owner, whose timeout key is
// {N}:owner:rwlock_timeout:k.
type t15Hold struct {
	owner string
	k     int
}

// t15Local is what a Client records of one owner: one entry per kind,
// one element per hold, true for a hold whose lease has not run out.
type t15Local struct {
	read, write []bool
}

func newT15Model(owners []string) *t15Model {
	m := &t15Model{}
	m.clear()
	m.local = map[string]*t15Local{}
	for _, o := range owners {
		m.local[o] = &t15Local{}
	}
	return m
}

// clear forgets the server state: the hash and every timeout key are gone.
func (m *t15Model) clear() {
	m.mode = ""
	m.reads = map[string]int{}
	m.writes = map[string]int{}
	m.alive = map[t15Hold]bool{}
}

// t15Holds is renewal.Entry.Holds: 0 once every hold's lease ran out.
func t15Holds(hs []bool) int {
	for _, live := range hs {
		if live {
			return len(hs)
		}
	}
	return 0
}

// t15Outcome is what an operation must return.
type t15Outcome int

const (
	t15OK t15Outcome = iota
	t15Busy
	t15NotHeld
	t15Upgrade
)

func (o t15Outcome) String() string {
	return [...]string{"ok", "busy", "not held", "upgrade refused"}[o]
}

// readAcquire applies a single-attempt read acquisition. A short one
// expires (server and client) before the next comparison.
func (m *t15Model) readAcquire(o string, short bool) t15Outcome {
	switch {
	case m.mode == "":
		m.mode = "read"
		m.reads[o] = 1
		m.alive[t15Hold{o, 1}] = true
		if short { // the hash got the short lease too
			m.clear()
		}
	case m.mode == "read" || (m.mode == "write" && m.writes[o] > 0):
		m.reads[o]++
		if !short {
			m.alive[t15Hold{o, m.reads[o]}] = true
		}
	default:
		return t15Busy
	}
	m.local[o].read = append(m.local[o].read, !short)
	return t15OK
}

// writeAcquire applies a single-attempt write acquisition.
func (m *t15Model) writeAcquire(o string, short bool) t15Outcome {
	l := m.local[o]
	if t15Holds(l.read) > 0 && t15Holds(l.write) == 0 {
		return t15Upgrade
	}
	switch {
	case m.mode == "":
		m.mode = "write"
		m.writes[o] = 1
		if short {
			m.clear()
		}
	case m.mode == "write" && m.writes[o] > 0:
		m.writes[o]++
	default:
		return t15Busy
	}
	l.write = append(l.write, !short)
	return t15OK
}

// readUnlock applies lua/rw_read_unlock.lua and the Client's bookkeeping.
func (m *t15Model) readUnlock(o string) t15Outcome {
	l := m.local[o]
	if m.mode == "" || m.reads[o] == 0 {
		l.read = nil
		return t15NotHeld
	}
	c := m.reads[o] - 1
	delete(m.alive, t15Hold{o, c + 1})
	if c == 0 {
		delete(m.reads, o)
	} else {
		m.reads[o] = c
	}
	released := true
	if len(m.reads)+len(m.writes) > 0 {
		for h := range m.alive {
			if h.k <= m.reads[h.owner] {
				released = false
			}
		}
		if m.mode == "write" {
			released = false
		}
	}
	if released {
		m.clear()
		l.read = nil
	} else if len(l.read) > 0 {
		l.read = l.read[:len(l.read)-1]
	}
	return t15OK
}

// writeUnlock applies lua/rw_write_unlock.lua and the Client's
// bookkeeping.
func (m *t15Model) writeUnlock(o string) t15Outcome {
	l := m.local[o]
	if m.mode != "write" || m.writes[o] == 0 {
		l.write = nil
		return t15NotHeld
	}
	if m.writes[o]--; m.writes[o] > 0 {
		if len(l.write) > 0 {
			l.write = l.write[:len(l.write)-1]
		}
		return t15OK
	}
	delete(m.writes, o)
	if len(m.reads) == 0 {
		m.clear()
	} else {
		m.mode = "read" // a downgrade
	}
	l.write = nil
	return t15OK
}

// hash is the lock hash the model expects (empty when it does not exist).
func (m *t15Model) hash() map[string]string {
	h := map[string]string{}
	if m.mode == "" {
		return h
	}
	h["mode"] = m.mode
	for o, n := range m.reads {
		h[o] = strconv.Itoa(n)
	}
	for o, n := range m.writes {
		h[o+":write"] = strconv.Itoa(n)
	}
	return h
}

// pending reports whether any owner still holds anything, on the server
// or in its Client's records.
func (m *t15Model) pending() bool {
	if m.mode != "" {
		return true
	}
	for _, l := range m.local {
		if len(l.read)+len(l.write) > 0 {
			return true
		}
	}
	return false
}

func (m *t15Model) String() string {
	return fmt.Sprintf("mode=%q reads=%v writes=%v alive=%v", m.mode, m.reads, m.writes, m.alive)
}
