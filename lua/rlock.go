package lua

// The reentrant lock's scripts (also the fenced lock's unlock and force
// unlock, which Redisson shares), and the watchdog's.
var (
	Acquire     = load("acquire", false)
	Unlock      = load("unlock", false)
	ForceUnlock = load("force_unlock", false)
	UndoAcquire = load("undo_acquire", false)
	Renew       = load("renew", true)
)
