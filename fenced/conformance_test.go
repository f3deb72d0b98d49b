package fenced_test

import (
	"testing"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fenced"
	"github.com/interlock-go/interlock/internal/locktest"
	"github.com/interlock-go/interlock/internal/script"
)

func TestConformance(t *testing.T) {
	locktest.Run(t, locktest.Kind{
		Name:    interlock.KindFenced,
		Prefix:  "fenced-test:",
		Addr:    addr,
		New:     func(c *interlock.Client, name string) interlock.Locker { return fenced.New(c, name) },
		Acquire: []*script.Script{script.FencedAcquire()},
		Unlock:  script.Unlock(),
		// Tokens only increase: the counter outlives every hold.
		Kept: func(name string) []string { return []string{tokenKey(name)} },
	})
}
