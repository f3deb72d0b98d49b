package rwlock_test

import (
	"testing"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/locktest"
	"github.com/interlock-go/interlock/lua"
	"github.com/interlock-go/interlock/rwlock"
)

func TestConformance(t *testing.T) {
	read := func(c *interlock.Client, name string) interlock.Locker { return rwlock.New(c, name).Read() }
	write := func(c *interlock.Client, name string) interlock.Locker { return rwlock.New(c, name).Write() }
	t.Run("read", func(t *testing.T) {
		locktest.Run(t, locktest.Kind{
			Name:    "rwlock",
			Prefix:  "rwlock-test:",
			Addr:    addr,
			New:     read,
			Acquire: []*lua.Script{lua.RWReadAcquire()},
			Unlock:  lua.RWReadUnlock(),
			Shared:  write,
		})
	})
	t.Run("write", func(t *testing.T) {
		locktest.Run(t, locktest.Kind{
			Name:    "rwlock",
			Prefix:  "rwlock-test:",
			Addr:    addr,
			New:     write,
			Acquire: []*lua.Script{lua.RWWriteAcquire()},
			Unlock:  lua.RWWriteUnlock(),
		})
	})
}
