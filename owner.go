package interlock

import (
	"context"
	"sync/atomic"

	"github.com/interlock-go/interlock/internal/runtime"
)

// WithOwner returns a context that makes every lock operation run with it
// act for owner id, whatever goroutine runs it, for work that moves between
// goroutines as a whole: the goroutine that unlocks must present the same
// owner as the one that locked (a Hold carries it for one acquisition; see
// "Owners" in the package documentation). id plays the role of a Java
// thread id and must be positive.
//
// Without it, the owner is the calling goroutine, so that nested calls on
// one goroutine re-enter a lock the way nested calls on one Java thread do.
// Explicit ids and goroutine ids are one number space: an explicit id equal
// to a goroutine's id is the same owner as that goroutine. NewOwnerID gives
// ids that no goroutine has.
func WithOwner(ctx context.Context, id int64) context.Context {
	return runtime.WithOwner(ctx, id)
}

// ownerIDs counts the ids NewOwnerID has given out, from 2^62 up: far above
// any goroutine id a process reaches.
var ownerIDs atomic.Int64

func init() { ownerIDs.Store(1 << 62) }

// NewOwnerID returns an owner id for WithOwner that is unique in this
// process and never equal to a goroutine id.
func NewOwnerID() int64 { return ownerIDs.Add(1) }

// OwnerID returns the owner id for ctx: the id given to WithOwner, or else
// the calling goroutine's id (read in a few nanoseconds on amd64 and arm64,
// see internal/goid).
func OwnerID(ctx context.Context) (int64, error) {
	id, err := runtime.OwnerID(ctx)
	if err != nil {
		return 0, &Error{Kind: KindClient, Op: OpOwner, Err: err}
	}
	return id, nil
}
