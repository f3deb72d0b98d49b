package runtime

import (
	"context"
	"fmt"
	"strconv"

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
	var buf [64]byte // an owner string is 36 + 1 + at most 20 bytes
	b := append(append(buf[:0], r.ID...), ':')
	return string(strconv.AppendInt(b, id, 10)), nil
}
