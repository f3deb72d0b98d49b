package script

// The count-down latch's scripts (Redisson's RCountDownLatch). Only
// latch_count_down takes a receipt, and so is the only one sent as
// retryable; the other two would reply differently to a resend.
var (
	latchTrySet    = load("latch_try_set")
	latchCountDown = load("latch_count_down")
	latchDelete    = load("latch_delete")
)

// LatchTrySet returns latch_try_set.lua.
func LatchTrySet() *Script { return latchTrySet }

// LatchCountDown returns latch_count_down.lua.
func LatchCountDown() *Script { return latchCountDown }

// LatchDelete returns latch_delete.lua.
func LatchDelete() *Script { return latchDelete }
