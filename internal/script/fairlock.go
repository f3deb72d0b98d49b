package script

// The fair lock's scripts (Redisson's RFairLock). Its watchdog renews with
// Renew, as the reentrant lock's does.
var (
	fairAcquire       = load("fair_acquire")
	fairTryAcquire    = load("fair_try_acquire")
	fairUnlock        = load("fair_unlock")
	fairForceUnlock   = load("fair_force_unlock")
	fairAcquireFailed = load("fair_acquire_failed")
	fairUndoAcquire   = load("fair_undo_acquire")
	fairTransfer      = load("fair_transfer")
)

// FairAcquire returns fair_acquire.lua.
func FairAcquire() *Script { return fairAcquire }

// FairTryAcquire returns fair_try_acquire.lua.
func FairTryAcquire() *Script { return fairTryAcquire }

// FairUnlock returns fair_unlock.lua.
func FairUnlock() *Script { return fairUnlock }

// FairForceUnlock returns fair_force_unlock.lua.
func FairForceUnlock() *Script { return fairForceUnlock }

// FairAcquireFailed returns fair_acquire_failed.lua.
func FairAcquireFailed() *Script { return fairAcquireFailed }

// FairUndoAcquire returns fair_undo_acquire.lua.
func FairUndoAcquire() *Script { return fairUndoAcquire }

// FairTransfer returns fair_transfer.lua.
func FairTransfer() *Script { return fairTransfer }
