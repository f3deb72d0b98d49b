package interlock

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/interlock-go/interlock/internal/report"
)

// The engine's terms are the root's: each of its operations and outcomes
// is a root constant of the same text, and its errors become *Error.
func TestEngineTermsAreTheRoots(t *testing.T) {
	ops := map[Op]bool{OpAcquire: true, OpRelease: true, OpRenew: true, OpLost: true, OpResend: true,
		OpRefused: true, OpUndo: true, OpPubSub: true, OpForceUnlock: true, OpGuard: true, OpInspect: true,
		OpSet: true, OpDelete: true, OpFence: true, OpExtend: true}
	for _, op := range []report.Op{report.OpAcquire, report.OpRelease, report.OpResend, report.OpRefused,
		report.OpUndo, report.OpForceUnlock, report.OpGuard, report.OpInspect, report.OpSet, report.OpDelete, report.OpLost, report.OpExtend} {
		assert.True(t, ops[Op(op)], "engine op %q", op)
	}
	outcomes := map[string]bool{OutcomeAcquired: true, OutcomeBusy: true, OutcomeTimedOut: true,
		OutcomeCancelled: true, OutcomeReleased: true, OutcomeDecremented: true, OutcomeTransferred: true,
		OutcomeNotHeld: true, OutcomeOK: true, OutcomeError: true}
	for _, o := range []string{report.OutcomeAcquired, report.OutcomeBusy, report.OutcomeTimedOut,
		report.OutcomeCancelled, report.OutcomeReleased, report.OutcomeDecremented, report.OutcomeTransferred,
		report.OutcomeNotHeld, report.OutcomeOK, report.OutcomeError} {
		assert.True(t, outcomes[o], "engine outcome %q", o)
	}

	boom := errors.New("boom")
	err := report.Wrap("rlock", report.OpAcquire, "orders", boom)
	assert.Equal(t, &Error{Kind: KindRLock, Op: OpAcquire, Name: "orders", Err: boom}, err)
	assert.Same(t, err, report.Wrap("fairlock", report.OpRelease, "x", err), "wrapped once")
	assert.Same(t, ErrNotHeld, report.ErrNotHeld)
}
