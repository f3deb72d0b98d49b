package reliability

import (
	"testing"
	"time"
)

// TestT26TwoReplicas is T26 (hazard H23): a master with two replicas,
// replica B cut off, a lock taken, the master killed and B promoted. One
// acknowledgement (from the other replica) lets the acquisition through,
// and the lock is lost with the master: the canary must show that in
// every run, as docs/design.md says safe mode only narrows the window.
// Asking for two acknowledgements, the acquisition must fail cleanly in
// every run, with no overlap.
func TestT26TwoReplicas(t *testing.T) {
	procRunLoss(t, procLossSetup{
		id:          "T26",
		replicas:    2,
		cut:         1,
		canaryAcks:  1,
		canaryWait:  2 * time.Second,
		safeAcks:    2,
		safeWait:    200 * time.Millisecond,
		lease:       3 * time.Second,
		runs:        sized(10, 100),
		canaryLabel: "acks=1",
		safeLabel:   "acks=2",
	})
}
