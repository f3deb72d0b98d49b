package fairlock_test

import (
	"testing"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/internal/locktest"
	"github.com/interlock-go/interlock/internal/script"
)

func TestConformance(t *testing.T) {
	locktest.Run(t, locktest.Kind{
		Name:    interlock.KindFairLock,
		Prefix:  "fairlock-test:",
		Addr:    addr,
		New:     func(c *interlock.Client, name string) interlock.Locker { return fairlock.New(c, name) },
		Acquire: []*script.Script{script.FairAcquire(), script.FairTryAcquire()},
		Unlock:  script.FairUnlock(),
		Fair:    true,
	})
}
