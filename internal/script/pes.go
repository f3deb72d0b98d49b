package script

// The expirable semaphore's scripts (Redisson's RPermitExpirableSemaphore),
// and pes_renew, the watchdog's. Its trySetPermits is SemTrySet.
var (
	pesAcquire     = load("pes_acquire")
	pesUndoAcquire = load("pes_undo_acquire")
	pesReleaseOne  = load("pes_release_one")
	pesRelease     = load("pes_release")
	pesAvailable   = load("pes_available")
	pesPermits     = load("pes_permits")
	pesAcquired    = load("pes_acquired")
	pesSetPermits  = load("pes_set_permits")
	pesAdd         = load("pes_add")
	pesUpdateLease = load("pes_update_lease")
	pesLease       = load("pes_lease")
	pesRenew       = load("pes_renew")
)

// NeverExpires is the score of a permit leased without an expiry:
// Long.MAX_VALUE/10000, as Redisson writes it.
const NeverExpires = "922337203685477"

// PESAcquire returns pes_acquire.lua.
func PESAcquire() *Script { return pesAcquire }

// PESUndoAcquire returns pes_undo_acquire.lua.
func PESUndoAcquire() *Script { return pesUndoAcquire }

// PESReleaseOne returns pes_release_one.lua.
func PESReleaseOne() *Script { return pesReleaseOne }

// PESRelease returns pes_release.lua.
func PESRelease() *Script { return pesRelease }

// PESAvailable returns pes_available.lua.
func PESAvailable() *Script { return pesAvailable }

// PESPermits returns pes_permits.lua.
func PESPermits() *Script { return pesPermits }

// PESAcquired returns pes_acquired.lua.
func PESAcquired() *Script { return pesAcquired }

// PESSetPermits returns pes_set_permits.lua.
func PESSetPermits() *Script { return pesSetPermits }

// PESAdd returns pes_add.lua.
func PESAdd() *Script { return pesAdd }

// PESUpdateLease returns pes_update_lease.lua.
func PESUpdateLease() *Script { return pesUpdateLease }

// PESLease returns pes_lease.lua.
func PESLease() *Script { return pesLease }

// PESRenew returns pes_renew.lua.
func PESRenew() *Script { return pesRenew }
