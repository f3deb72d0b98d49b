package rlock

import (
	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/lockcore"
)

// The kind's errors are the root's.
var (
	ErrNotHeld  = interlock.ErrNotHeld
	ErrLockLost = interlock.ErrLockLost
	ErrClosed   = interlock.ErrClosed
)

// kind is Redisson's RLock, as the engine runs it.
var kind = lockcore.Reentrant("rlock")

// Mutex is a reentrant lock shared with Redisson's RLock of the same name.
// Its methods are interlock.Locker's. It holds nothing but its name: every
// Mutex of one name on one Client sees the same holds.
type Mutex struct {
	lockcore.Common
}

var _ interlock.Locker = (*Mutex)(nil)

// New returns the reentrant lock called name. A bad name or a nil client
// is reported by every method, before anything is sent.
func New(c *interlock.Client, name string) *Mutex {
	return &Mutex{lockcore.New(c, &kind, name)}
}
