package rwlock_test

import (
	"testing"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/locktest"
	"github.com/interlock-go/interlock/internal/script"
	"github.com/interlock-go/interlock/rwlock"
)

func TestConformance(t *testing.T) {
	read := func(c *interlock.Client, name string) interlock.Locker { return rwlock.New(c, name).Read() }
	write := func(c *interlock.Client, name string) interlock.Locker { return rwlock.New(c, name).Write() }
	t.Run("read", func(t *testing.T) {
		locktest.Run(t, locktest.Kind{
			Name:    interlock.KindReadLock,
			Prefix:  "rwlock-test:",
			Addr:    addr,
			New:     read,
			Acquire: []*script.Script{script.RWReadAcquire()},
			Unlock:  script.RWReadUnlock(),
			Shared:  write,
		})
	})
	t.Run("write", func(t *testing.T) {
		locktest.Run(t, locktest.Kind{
			Name:    interlock.KindWriteLock,
			Prefix:  "rwlock-test:",
			Addr:    addr,
			New:     write,
			Acquire: []*script.Script{script.RWWriteAcquire()},
			Unlock:  script.RWWriteUnlock(),
		})
	})
}
