package lua

// The read/write lock's scripts (Redisson's RReadWriteLock: RedissonReadLock,
// RedissonWriteLock and the watchdog's ReadLockTask). The write lock's
// watchdog renewal is Renew, Redisson's LockTask.
var (
	RWReadAcquire  = load("rw_read_acquire", false)
	RWWriteAcquire = load("rw_write_acquire", false)
	RWReadUnlock   = load("rw_read_unlock", false)
	RWWriteUnlock  = load("rw_write_unlock", false)
	RWForceUnlock  = load("rw_force_unlock", true)
	RWReadIsLocked = load("rw_read_is_locked", true)
	RWRenewRead    = load("rw_renew_read", true)
	RWUndoRead     = load("rw_undo_read", false)
	RWUndoWrite    = load("rw_undo_write", false)
)
