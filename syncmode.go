package interlock

import "fmt"

// SyncMode chooses what WithReplicaSync waits with, as Redisson's SyncMode
// does for its replica sync.
type SyncMode int

const (
	// SyncAuto waits with WAITAOF 1 n timeout on a master that has AOF on
	// (aof_enabled in INFO persistence) and knows WAITAOF (Redis 7.2+,
	// Valkey), and with WAIT n timeout elsewhere: what Redisson 3.46-3.52
	// send after lock scripts. It is the default.
	SyncAuto SyncMode = iota
	// SyncAck always waits with WAIT n timeout and never reads the AOF
	// state or probes for WAITAOF: what Redisson 4 sends after lock scripts.
	SyncAck
)

// String returns the mode's name, as Redisson spells it.
func (m SyncMode) String() string {
	switch m {
	case SyncAuto:
		return "AUTO"
	case SyncAck:
		return "ACK"
	}
	return fmt.Sprintf("SyncMode(%d)", int(m))
}

// WithReplicaSyncMode sets what WithReplicaSync waits with: SyncAuto (the
// default; WAITAOF where the master has AOF on) or SyncAck (WAIT only, no
// AOF check, as Redisson 4 does). It needs WithReplicaSync.
func WithReplicaSyncMode(m SyncMode) Option {
	return func(c *config) {
		c.ReplicaSyncAck, c.syncMode, c.syncModeSet = m == SyncAck, m, true
	}
}
