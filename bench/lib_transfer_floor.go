package main

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/interlock-go/interlock/internal/keys"
)

// transferFloor is the bound of a lock that its holders pass on to the
// waiters of their process, as interlock's hand-off does, with none of
// interlock's Go code: one transfer.lua round trip per acquisition and one
// channel send to the waiter, the longest waiting first. It is the second
// floor of S3 ("× floor 2"): no lock that keeps Redisson's hash and
// confirms each hand-off with the server before the next holder runs can
// go faster on one connection.
//
// Lock takes the lock with acquire.lua when no goroutine of the process
// holds it, else queues and waits to be passed it. Unlock passes it to
// the queue's head with transfer.lua (its latch left to its TTL), or
// releases it with the latched unlock script when nobody queues. It only
// passes the lock within its process: S4 is not its scenario.
type transferFloor struct{}

func init() { Register(3, transferFloor{}) }

func (transferFloor) Name() string { return "floor: one hand-off script per acquisition (rueidis)" }

func (transferFloor) Open(ctx context.Context, addr string) (Session, error) {
	rc, publish, err := openFloor(ctx, addr, floorScript("acquire"), floorScript("unlock"), floorScript("transfer"))
	if err != nil {
		return nil, err
	}
	return &transferSession{cnt: newCountingClient(rc), id: keys.RequestID(), publish: publish,
		locks: map[string]*transferLine{}}, nil
}

type transferSession struct {
	cnt     *countingClient
	id      string
	publish string
	threads atomic.Int64

	mu    sync.Mutex
	locks map[string]*transferLine
}

// transferLine is one lock as the process sees it: whether one of its
// goroutines holds it (or is taking it), and who waits for it.
type transferLine struct {
	held  bool
	queue []*transferMutex
}

func (s *transferSession) IsContendedFloor()       { /* marker */ }
func (s *transferSession) OneProcess()             { /* marker */ }
func (s *transferSession) Commands() (int64, bool) { return s.cnt.n.Load(), true }

func (s *transferSession) Close() error {
	s.cnt.Client.Close()
	return nil
}

func (s *transferSession) Mutex(name string) Mutex {
	return &transferMutex{s: s, name: name, channel: keys.LockChannel(name),
		owner: s.id + ":" + strconv.FormatInt(s.threads.Add(1), 10), wake: make(chan bool, 1)}
}

type transferMutex struct {
	s                    *transferSession
	name, channel, owner string
	// wake tells a queued waiter that it holds the lock (true) or that
	// the lock was released and is its to take (false).
	wake chan bool
}

var errTransferElsewhere = errors.New("floor: lock held by another process (the floor passes it within its process only)")

// Lock takes the lock, or queues behind the holder of this process.
func (m *transferMutex) Lock(ctx context.Context) error {
	m.s.mu.Lock()
	ln := m.s.locks[m.name]
	if ln == nil {
		ln = &transferLine{}
		m.s.locks[m.name] = ln
	}
	if !ln.held {
		ln.held = true
		m.s.mu.Unlock()
		return m.take(ctx)
	}
	ln.queue = append(ln.queue, m)
	m.s.mu.Unlock()
	// The harness lets every wait finish, so no wait is abandoned.
	if passed := <-m.wake; passed {
		return nil
	}
	return m.take(ctx)
}

func (m *transferMutex) take(ctx context.Context) error {
	ttl, err := floorAcquire(ctx, m.s.cnt, m.name, m.owner)
	if err == nil && ttl >= 0 {
		return errTransferElsewhere
	}
	return err
}

// Unlock passes the lock to the longest waiter of the process, or
// releases it.
func (m *transferMutex) Unlock(ctx context.Context) error {
	m.s.mu.Lock()
	ln := m.s.locks[m.name]
	var next *transferMutex
	if len(ln.queue) > 0 {
		next, ln.queue = ln.queue[0], ln.queue[1:]
	}
	m.s.mu.Unlock()
	if next != nil {
		reply, err := m.s.cnt.Do(ctx, m.s.cnt.B().Evalsha().Sha1(floorScript("transfer").SHA1()).Numkeys(3).
			Key(m.name, keys.UnlockLatch(m.name, keys.RequestID()), m.channel).
			Arg(floorWatchdogMs, m.owner, floorLatchMs, next.owner, floorWatchdogMs, m.s.publish, "0").Build()).AsIntSlice()
		if err != nil || len(reply) != 2 || reply[0] != 2 {
			return errors.Join(errors.New("floor: the lock was not passed"), err)
		}
		next.wake <- true
		return nil
	}
	n, err := floorUnlock(ctx, m.s.cnt, m.name, m.channel, m.owner, m.s.publish, keys.UnlockLatch(m.name, keys.RequestID()))
	if err == nil && n != 1 {
		err = errors.New("floor: the lock was not released")
	}
	// Whoever queued while the release was on its way takes the lock.
	m.s.mu.Lock()
	if len(ln.queue) > 0 {
		next, ln.queue = ln.queue[0], ln.queue[1:]
	} else {
		ln.held = false
	}
	m.s.mu.Unlock()
	if next != nil {
		next.wake <- false
	}
	return err
}
