package runtime

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/interlock-go/interlock/internal/goid"
	"github.com/interlock-go/interlock/internal/report"
)

type ownerKey struct{}

// WithOwner is interlock.WithOwner.
func WithOwner(ctx context.Context, id int64) context.Context {
	return context.WithValue(ctx, ownerKey{}, id)
}

// OwnerID is interlock.OwnerID: the id WithOwner gave ctx, or else the
// calling goroutine's.
func OwnerID(ctx context.Context) (int64, error) {
	if id, ok := ctx.Value(ownerKey{}).(int64); ok {
		if id <= 0 {
			return 0, fmt.Errorf("%w: owner id %d must be positive", report.ErrInvalid, id)
		}
		return id, nil
	}
	return goid.ID()
}

// Owner is interlock.Client.Owner: "<client id>:<owner id>".
func (r *Runtime) Owner(ctx context.Context) (string, error) {
	id, err := OwnerID(ctx)
	if err != nil {
		return "", err
	}
	return r.owners.name(r.ID, id), nil
}

// ownerCacheSize is how many owner strings a Runtime keeps, one per slot
// of an owner id's low bits: a goroutine that locks and unlocks again
// and again builds its owner string once.
const ownerCacheSize = 256

// ownerNames caches owner strings by owner id, lock-free: a slot holds
// the latest id that landed on it, which only a lookup of that very id
// returns.
type ownerNames [ownerCacheSize]atomic.Pointer[ownerName]

type ownerName struct {
	id   int64
	name string
}

// name returns "<client>:<id>", from the cache when it holds id.
func (c *ownerNames) name(client string, id int64) string {
	slot := &c[uint64(id)%ownerCacheSize]
	if n := slot.Load(); n != nil && n.id == id {
		return n.name
	}
	var buf [64]byte // an owner string is 36 + 1 + at most 20 bytes
	b := append(append(buf[:0], client...), ':')
	n := &ownerName{id: id, name: string(strconv.AppendInt(b, id, 10))}
	slot.Store(n)
	return n.name
}

// OwnerOf returns ctx seen with from's owner: its end, deadline, cause and
// other values are ctx's, while the owner WithOwner gave it (if any) is
// replaced by from's (or none). A guard made for a hold's owner is handed
// back this way, so that work run under the guard does not act for that
// owner unless the caller's context already did.
func OwnerOf(ctx, from context.Context) context.Context {
	return ownerOf{Context: ctx, from: from}
}

type ownerOf struct {
	context.Context
	from context.Context
}

// Value answers the owner key from from, every other key from the context.
func (c ownerOf) Value(key any) any {
	if _, ok := key.(ownerKey); ok {
		return c.from.Value(key)
	}
	return c.Context.Value(key)
}

func (c ownerOf) String() string { return fmt.Sprintf("%v", c.Context) }
