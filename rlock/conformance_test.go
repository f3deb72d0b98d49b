package rlock_test

import (
	"testing"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/locktest"
	"github.com/interlock-go/interlock/internal/script"
	"github.com/interlock-go/interlock/rlock"
)

func TestConformance(t *testing.T) {
	locktest.Run(t, locktest.Kind{
		Name:    interlock.KindRLock,
		Prefix:  "rlock-test:",
		Addr:    addr,
		New:     func(c *interlock.Client, name string) interlock.Locker { return rlock.New(c, name) },
		Acquire: []*script.Script{script.Acquire()},
		Unlock:  script.Unlock(),
	})
}
