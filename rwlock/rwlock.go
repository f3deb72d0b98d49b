package rwlock

import (
	"errors"
	"strings"
	"time"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	lc "github.com/interlock-go/interlock/internal/lockcore"
	"github.com/interlock-go/interlock/internal/renewal"
	"github.com/interlock-go/interlock/internal/script"
)

var (
	// ErrUpgrade is returned, without sending anything, by a write
	// acquisition of an owner that holds the read lock but not the write
	// lock: it would wait for its own read holds. A waiting write
	// acquisition whose owner takes the read lock meanwhile fails with it.
	ErrUpgrade = errors.New("rwlock: cannot upgrade a read lock to a write lock")
)

// The two halves of Redisson's RReadWriteLock are two kinds to the engine:
// their holds are recorded under "<owner>" and "<owner>:write", and renewed
// by different scripts. Both publish on redisson_rwlock:{name}; read holds
// also keep timeout keys {name}:<owner>:rwlock_timeout:<k>.
var (
	prefix   = lc.Key(0)
	timeouts = lc.OwnerKey(0, ":"+keys.ReadTimeoutSuffix)
	derived  = []func(string) string{keyPrefix}
	channel  = lc.Prefixed(keys.ReadWriteChannelPrefix)

	readKind = lc.Kind{
		Event:    string(interlock.KindReadLock),
		Channel:  channel,
		Keys:     derived,
		ReadHalf: true,
		Acquire:  lc.Call{Script: script.RWReadAcquire, Keys: []lc.Arg{lc.Name, timeouts}, Args: []lc.Arg{lc.Lease, lc.Owner, lc.OwnerPlus(":write")}},
		Unlock: lc.Call{Script: script.RWReadUnlock, Keys: []lc.Arg{lc.Name, lc.Channel, timeouts, prefix, lc.Latch},
			Args: []lc.Arg{lc.Lit("0"), lc.Owner, lc.Publish, lc.LatchTTL}},
		Undo:     lc.Call{Script: script.RWUndoRead, Keys: []lc.Arg{lc.Name, lc.Channel, timeouts, prefix}, Args: []lc.Arg{lc.Lit("0"), lc.Owner, lc.Expected, lc.Publish}},
		Force:    lc.Call{Script: script.RWForceUnlock, Keys: []lc.Arg{lc.Name, lc.Channel}, Args: []lc.Arg{lc.Lit("0"), lc.Publish, lc.Lit("read")}},
		IsLocked: &lc.Call{Script: script.RWReadIsLocked, Keys: []lc.Arg{lc.Name}},
		Extend:   lc.Call{Script: script.RWExtendRead, Keys: []lc.Arg{lc.Name, timeouts}, Args: []lc.Arg{lc.Lease, lc.Owner}},
		Renew:    &renewal.Task{Script: script.RWRenewRead(), Args: readRenewArgs, Lost: interlock.ErrLockLost, KeepLosses: true},
	}
	writeKind = lc.Kind{
		Event:   string(interlock.KindWriteLock),
		Suffix:  ":write",
		Channel: channel,
		Keys:    derived,
		Upgrade: ErrUpgrade,
		Acquire: lc.Call{Script: script.RWWriteAcquire, Keys: []lc.Arg{lc.Name}, Args: []lc.Arg{lc.Lease, lc.Owner}},
		Unlock: lc.Call{Script: script.RWWriteUnlock, Keys: []lc.Arg{lc.Name, lc.Channel, lc.Latch},
			Args: []lc.Arg{lc.Lit("1"), lc.Lease, lc.Owner, lc.Publish, lc.LatchTTL}},
		Undo:  lc.Call{Script: script.RWUndoWrite, Keys: []lc.Arg{lc.Name, lc.Channel}, Args: []lc.Arg{lc.Lit("1"), lc.Owner, lc.Expected, lc.Publish}},
		Force: lc.Call{Script: script.RWForceUnlock, Keys: []lc.Arg{lc.Name, lc.Channel}, Args: []lc.Arg{lc.Lit("1"), lc.Publish, lc.Lit("write")}},
		Transfer: &lc.Call{Script: script.RWWriteTransfer, Keys: []lc.Arg{lc.Name, lc.Latch, lc.Channel},
			Args: []lc.Arg{lc.Lease, lc.Owner, lc.LatchTTL, lc.Next, lc.NextLease, lc.Publish, lc.Yield}},
		LockedMode: "write",
		Extend:     lc.ExtendOne,
		Renew:      lc.RenewTask,
	}
)

// readRenewArgs builds the KEYS and ARGV of script.RWRenewRead (Redisson
// 4.4+'s ReadLockTask). Redisson lists all of a client's owners of a lock
// under one pair of keys; the Scheduler wants one answer per (lock, owner),
// so each gets its own pair, which the script treats alike.
func readRenewArgs(lease time.Duration, chunk []*renewal.Entry) (keys, argv []string) {
	keys = make([]string, 0, 2*len(chunk))
	argv = make([]string, 1, 1+2*len(chunk))
	argv[0] = lc.MS(lease)
	for _, e := range chunk {
		keys = append(keys, e.Key, keyPrefix(e.Key))
		argv = append(argv, "1", e.Owner)
	}
	return keys, argv
}

// keyPrefix is what Redisson's suffixName puts before ":suffix": "{name}",
// or name itself when it contains "{".
func keyPrefix(name string) string {
	return strings.TrimSuffix(keys.Suffix(name, ""), ":")
}

// Mutex is a read/write lock shared with Redisson's RReadWriteLock of the
// same name: any number of readers, or one writer. The package
// documentation states its policy.
type Mutex struct {
	read  ReadLock
	write WriteLock
}

//go:generate go run ../internal/gen/locker ReadLock WriteLock

// ReadLock is the shared half of a Mutex, with interlock.Locker's methods:
// many owners may hold it while nobody holds the write lock.
type ReadLock struct{ engine }

// WriteLock is the exclusive half of a Mutex, with interlock.Locker's
// methods. An owner that holds only the read lock gets ErrUpgrade.
type WriteLock struct{ engine }

var (
	_ interlock.Locker = (*ReadLock)(nil)
	_ interlock.Locker = (*WriteLock)(nil)
)

// New returns the read/write lock called name. A bad name or a nil client
// is reported by every method, before anything is sent.
func New(c *interlock.Client, name string) *Mutex {
	return &Mutex{read: ReadLock{lc.Embedded(lc.New(c, &readKind, name))}, write: WriteLock{lc.Embedded(lc.New(c, &writeKind, name))}}
}

// Name returns the lock's name as given (see interlock.WithNameMapper).
func (m *Mutex) Name() string { return m.read.Name() }

// Read returns the lock's read half (Redisson's readLock()).
func (m *Mutex) Read() *ReadLock { return &m.read }

// Write returns the lock's write half (Redisson's writeLock()).
func (m *Mutex) Write() *WriteLock { return &m.write }
