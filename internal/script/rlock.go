package script

// The reentrant lock's scripts (also the fenced lock's unlock and force
// unlock, which Redisson shares), and the watchdog's.
var (
	acquire     = load("acquire")
	unlock      = load("unlock")
	forceUnlock = load("force_unlock")
	undoAcquire = load("undo_acquire")
	transfer    = load("transfer")
	renew       = load("renew")
)

// Acquire returns acquire.lua.
func Acquire() *Script { return acquire }

// Unlock returns unlock.lua.
func Unlock() *Script { return unlock }

// ForceUnlock returns force_unlock.lua.
func ForceUnlock() *Script { return forceUnlock }

// UndoAcquire returns undo_acquire.lua.
func UndoAcquire() *Script { return undoAcquire }

// Renew returns renew.lua.
func Renew() *Script { return renew }

// Transfer returns transfer.lua.
func Transfer() *Script { return transfer }

// renewal.Keeper's batch renewal.
var keep = load("keep")

// Keep returns keep.lua.
func Keep() *Script { return keep }
