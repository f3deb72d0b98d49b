package conformance_test

import (
	"strings"
	"testing"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/fenced"
	"github.com/interlock-go/interlock/internal/script"
	"github.com/interlock-go/interlock/nonreentrant"
	"github.com/interlock-go/interlock/rlock"
	"github.com/interlock-go/interlock/rwlock"
	"github.com/interlock-go/interlock/spin"
)

// The lock kinds, each with what the suite must know of it. The tests
// below run them one after another, on one server and one cluster.
var (
	rlockKind = Kind{
		Name:    interlock.KindRLock,
		Prefix:  "rlock-test:",
		New:     func(c *interlock.Client, name string) interlock.Locker { return rlock.New(c, name) },
		Acquire: []*script.Script{script.Acquire()},
		Unlock:  script.Unlock(),
	}
	fairKind = Kind{
		Name:    interlock.KindFairLock,
		Prefix:  "fairlock-test:",
		New:     func(c *interlock.Client, name string) interlock.Locker { return fairlock.New(c, name) },
		Acquire: []*script.Script{script.FairAcquire(), script.FairTryAcquire()},
		Unlock:  script.FairUnlock(),
		Fair:    true,
	}
	fencedKind = Kind{
		Name:    interlock.KindFenced,
		Prefix:  "fenced-test:",
		New:     func(c *interlock.Client, name string) interlock.Locker { return fenced.New(c, name) },
		Acquire: []*script.Script{script.FencedAcquire()},
		Unlock:  script.Unlock(),
		// Tokens only increase: the counter outlives every hold.
		Kept: func(name string) []string { return []string{tokenKey(name)} },
	}
	spinKind = Kind{
		Name:    interlock.KindSpin,
		Prefix:  "spin-test:",
		New:     func(c *interlock.Client, name string) interlock.Locker { return spin.New(c, name) },
		Acquire: []*script.Script{script.Acquire()},
		Unlock:  script.Unlock(),
		Polls:   true,
	}
	nonReentrantKind = Kind{
		Name:      interlock.KindNonReentrant,
		Prefix:    "nonreentrant-test:",
		New:       func(c *interlock.Client, name string) interlock.Locker { return nonreentrant.New(c, name) },
		Acquire:   []*script.Script{script.Acquire()},
		Unlock:    script.Unlock(),
		Reentered: nonreentrant.ErrReentered,
	}
	nonReentrantFairKind = Kind{
		Name:      interlock.KindNonReentrantFair,
		Prefix:    "nonreentrant-fair-test:",
		New:       func(c *interlock.Client, name string) interlock.Locker { return nonreentrant.NewFair(c, name) },
		Acquire:   []*script.Script{script.FairAcquire(), script.FairTryAcquire()},
		Unlock:    script.FairUnlock(),
		Fair:      true,
		Reentered: nonreentrant.ErrReentered,
	}
	readKind = Kind{
		Name:    interlock.KindReadLock,
		Prefix:  "rwlock-test:",
		New:     readHalf,
		Acquire: []*script.Script{script.RWReadAcquire()},
		Unlock:  script.RWReadUnlock(),
		Shared:  writeHalf,
	}
	writeKind = Kind{
		Name:    interlock.KindWriteLock,
		Prefix:  "rwlock-test:",
		New:     writeHalf,
		Acquire: []*script.Script{script.RWWriteAcquire()},
		Unlock:  script.RWWriteUnlock(),
	}
)

// readHalf and writeHalf are the two halves of the read/write lock name.
func readHalf(c *interlock.Client, name string) interlock.Locker  { return rwlock.New(c, name).Read() }
func writeHalf(c *interlock.Client, name string) interlock.Locker { return rwlock.New(c, name).Write() }

// tokenKey spells out the name of a fenced lock's token counter by hand
// (§1.5), rather than computing it the way the package does.
func tokenKey(name string) string {
	if strings.Contains(name, "{") {
		return "redisson_lock_token:" + name
	}
	return "redisson_lock_token:{" + name + "}"
}

func TestRLock(t *testing.T)            { Run(t, rlockKind) }
func TestFairLock(t *testing.T)         { Run(t, fairKind) }
func TestFenced(t *testing.T)           { Run(t, fencedKind) }
func TestSpin(t *testing.T)             { Run(t, spinKind) }
func TestNonReentrant(t *testing.T)     { Run(t, nonReentrantKind) }
func TestNonReentrantFair(t *testing.T) { Run(t, nonReentrantFairKind) }

func TestRWLock(t *testing.T) {
	t.Run("read", func(t *testing.T) { Run(t, readKind) })
	t.Run("write", func(t *testing.T) { Run(t, writeKind) })
}
