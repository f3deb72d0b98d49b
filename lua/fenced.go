package lua

// The fenced lock's acquire script (its unlock, force unlock and renewal
// are the reentrant lock's, as in Redisson), and the resource-side fence
// that checks its tokens.
var (
	FencedAcquire = load("fenced_acquire", false)
	FenceWrite    = load("fence_write", false)
)
