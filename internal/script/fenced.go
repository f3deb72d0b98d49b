package script

// The fenced lock's acquire script (its unlock, force unlock and renewal
// are the reentrant lock's, as in Redisson), and the resource-side fence
// that checks its tokens.
var (
	fencedAcquire = load("fenced_acquire")
	fenceWrite    = load("fence_write")
)

// FencedAcquire returns fenced_acquire.lua.
func FencedAcquire() *Script { return fencedAcquire }

// FenceWrite returns fence_write.lua.
func FenceWrite() *Script { return fenceWrite }
