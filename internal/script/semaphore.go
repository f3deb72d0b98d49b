package script

// The plain semaphore's scripts (Redisson's RSemaphore). sem_try_set also
// serves the expirable semaphore's trySetPermits, which Redisson shares.
// Scripts that take an optional receipt are sent as retryable: callers that
// may resend them pass one, which makes a resend change nothing.
var (
	semAcquire         = load("sem_acquire")
	semUndoAcquire     = load("sem_undo_acquire")
	semRelease         = load("sem_release")
	semReleaseIfExists = load("sem_release_if_exists")
	semTrySet          = load("sem_try_set")
	semAdd             = load("sem_add")
	semDrain           = load("sem_drain")
)

// SemAcquire returns sem_acquire.lua.
func SemAcquire() *Script { return semAcquire }

// SemUndoAcquire returns sem_undo_acquire.lua.
func SemUndoAcquire() *Script { return semUndoAcquire }

// SemRelease returns sem_release.lua.
func SemRelease() *Script { return semRelease }

// SemReleaseIfExists returns sem_release_if_exists.lua.
func SemReleaseIfExists() *Script { return semReleaseIfExists }

// SemTrySet returns sem_try_set.lua.
func SemTrySet() *Script { return semTrySet }

// SemAdd returns sem_add.lua.
func SemAdd() *Script { return semAdd }

// SemDrain returns sem_drain.lua.
func SemDrain() *Script { return semDrain }
