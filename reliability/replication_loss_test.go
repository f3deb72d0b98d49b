package reliability

import (
	"testing"
	"time"
)

// TestT09ReplicationLoss is T9 (hazard H11), the deterministic
// asynchronous-replication loss: with the replica cut off, client A
// acquires on the master, the master is killed, the replica resumed and
// promoted, and client B acquires on it. Without safe mode (the canary) B
// must get every lock while A still believes it holds it, in every run,
// or the oracle is blind. With one replica acknowledgement asked for, A's
// Lock must fail with ErrReplication and leave no key, and the oracle
// must see no overlap. Every kind runs in every run, canary and safe side
// by side (see procRunLoss).
func TestT09ReplicationLoss(t *testing.T) {
	procRunLoss(t, procLossSetup{
		id:          "T09",
		replicas:    1,
		cut:         0,
		canaryAcks:  0,
		safeAcks:    1,
		safeWait:    200 * time.Millisecond,
		lease:       3 * time.Second,
		runs:        sized(20, 200),
		canaryLabel: "no safe mode",
		safeLabel:   "acks=1",
	})
}
