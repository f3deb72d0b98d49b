package script

// The rate limiter's scripts (Redisson's RRateLimiter). rl_acquire takes
// a receipt and rl_available reads the clock it is given, so both are sent
// as retryable; the two setters would answer or act differently when
// resent and are not.
var (
	rlAcquire     = load("rl_acquire")
	rlUndoAcquire = load("rl_undo_acquire")
	rlAvailable   = load("rl_available")
	rlTrySet      = load("rl_try_set")
	rlSet         = load("rl_set")
)

// RLAcquire returns rl_acquire.lua.
func RLAcquire() *Script { return rlAcquire }

// RLUndoAcquire returns rl_undo_acquire.lua.
func RLUndoAcquire() *Script { return rlUndoAcquire }

// RLAvailable returns rl_available.lua.
func RLAvailable() *Script { return rlAvailable }

// RLTrySet returns rl_try_set.lua.
func RLTrySet() *Script { return rlTrySet }

// RLSet returns rl_set.lua.
func RLSet() *Script { return rlSet }
