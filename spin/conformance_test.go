package spin_test

import (
	"testing"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/locktest"
	"github.com/interlock-go/interlock/internal/script"
	"github.com/interlock-go/interlock/spin"
)

func TestConformance(t *testing.T) {
	locktest.Run(t, locktest.Kind{
		Name:    interlock.KindSpin,
		Prefix:  "spin-test:",
		Addr:    addr,
		New:     func(c *interlock.Client, name string) interlock.Locker { return spin.New(c, name) },
		Acquire: []*script.Script{script.Acquire()},
		Unlock:  script.Unlock(),
		Polls:   true,
	})
}
