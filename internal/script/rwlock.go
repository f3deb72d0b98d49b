package script

// The read/write lock's scripts (Redisson's RReadWriteLock: RedissonReadLock,
// RedissonWriteLock and the watchdog's ReadLockTask). The write lock's
// watchdog renewal is Renew, Redisson's LockTask.
var (
	rwReadAcquire   = load("rw_read_acquire")
	rwWriteAcquire  = load("rw_write_acquire")
	rwReadUnlock    = load("rw_read_unlock")
	rwWriteUnlock   = load("rw_write_unlock")
	rwForceUnlock   = load("rw_force_unlock")
	rwReadIsLocked  = load("rw_read_is_locked")
	rwRenewRead     = load("rw_renew_read")
	rwExtendRead    = load("rw_extend_read")
	rwUndoRead      = load("rw_undo_read")
	rwUndoWrite     = load("rw_undo_write")
	rwWriteTransfer = load("rw_write_transfer")
)

// RWReadAcquire returns rw_read_acquire.lua.
func RWReadAcquire() *Script { return rwReadAcquire }

// RWWriteAcquire returns rw_write_acquire.lua.
func RWWriteAcquire() *Script { return rwWriteAcquire }

// RWReadUnlock returns rw_read_unlock.lua.
func RWReadUnlock() *Script { return rwReadUnlock }

// RWWriteUnlock returns rw_write_unlock.lua.
func RWWriteUnlock() *Script { return rwWriteUnlock }

// RWForceUnlock returns rw_force_unlock.lua.
func RWForceUnlock() *Script { return rwForceUnlock }

// RWReadIsLocked returns rw_read_is_locked.lua.
func RWReadIsLocked() *Script { return rwReadIsLocked }

// RWRenewRead returns rw_renew_read.lua.
func RWRenewRead() *Script { return rwRenewRead }

// RWExtendRead returns rw_extend_read.lua.
func RWExtendRead() *Script { return rwExtendRead }

// RWUndoRead returns rw_undo_read.lua.
func RWUndoRead() *Script { return rwUndoRead }

// RWUndoWrite returns rw_undo_write.lua.
func RWUndoWrite() *Script { return rwUndoWrite }

// RWWriteTransfer returns rw_write_transfer.lua.
func RWWriteTransfer() *Script { return rwWriteTransfer }
