package lua

// The fair lock's scripts (Redisson's RFairLock). Its watchdog renews with
// Renew, as the reentrant lock's does.
var (
	FairAcquire       = load("fair_acquire", false)
	FairTryAcquire    = load("fair_try_acquire", false)
	FairUnlock        = load("fair_unlock", false)
	FairForceUnlock   = load("fair_force_unlock", true)
	FairAcquireFailed = load("fair_acquire_failed", true)
	FairUndoAcquire   = load("fair_undo_acquire", false)
)
