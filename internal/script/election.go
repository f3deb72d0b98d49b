package script

// An election's scripts: the fenced lock's acquire, unlock and renewal that
// also keep the leader's value key, and the read of the leader.
var (
	leaderAcquire = load("leader_acquire")
	leaderUnlock  = load("leader_unlock")
	leaderRenew   = load("leader_renew")
	leaderRead    = load("leader_read")
)

// LeaderAcquire returns leader_acquire.lua.
func LeaderAcquire() *Script { return leaderAcquire }

// LeaderUnlock returns leader_unlock.lua.
func LeaderUnlock() *Script { return leaderUnlock }

// LeaderRenew returns leader_renew.lua.
func LeaderRenew() *Script { return leaderRenew }

// LeaderRead returns leader_read.lua.
func LeaderRead() *Script { return leaderRead }
