package nonreentrant_test

import (
	"testing"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/locktest"
	"github.com/interlock-go/interlock/internal/script"
	"github.com/interlock-go/interlock/nonreentrant"
)

func TestConformance(t *testing.T) {
	locktest.Run(t, locktest.Kind{
		Name:      interlock.KindNonReentrant,
		Prefix:    "nonreentrant-test:",
		Addr:      addr,
		New:       func(c *interlock.Client, name string) interlock.Locker { return nonreentrant.New(c, name) },
		Acquire:   []*script.Script{script.Acquire()},
		Unlock:    script.Unlock(),
		Reentered: nonreentrant.ErrReentered,
	})
}

func TestConformanceFair(t *testing.T) {
	locktest.Run(t, locktest.Kind{
		Name:      interlock.KindNonReentrantFair,
		Prefix:    "nonreentrant-fair-test:",
		Addr:      addr,
		New:       func(c *interlock.Client, name string) interlock.Locker { return nonreentrant.NewFair(c, name) },
		Acquire:   []*script.Script{script.FairAcquire(), script.FairTryAcquire()},
		Unlock:    script.FairUnlock(),
		Fair:      true,
		Reentered: nonreentrant.ErrReentered,
	})
}
