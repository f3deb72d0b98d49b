package lua

// The count-down latch's scripts (Redisson's RCountDownLatch). Only
// latch_count_down takes a receipt, and so is the only one marked
// retryable; the other two would reply differently to a resend.
var (
	latchTrySet    = load("latch_try_set", false)
	latchCountDown = load("latch_count_down", true)
	latchDelete    = load("latch_delete", false)
)

// LatchTrySet returns latch_try_set.lua.
func LatchTrySet() *Script { return latchTrySet }

// LatchCountDown returns latch_count_down.lua.
func LatchCountDown() *Script { return latchCountDown }

// LatchDelete returns latch_delete.lua.
func LatchDelete() *Script { return latchDelete }
