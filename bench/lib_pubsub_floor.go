package main

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/keys"
)

// pubsubFloor is Redisson's lock protocol with Redisson's way of waiting,
// on raw rueidis and with none of interlock's Go code: the floor of the
// scenarios that wait (S3, S4), and their "× floor" denominator.
//
// Lock sends the acquire script; while the lock is held it waits on the
// lock's channel, subscribed once per process and channel, for a release
// message or the holder's TTL, then tries again. Every message wakes one
// waiter, as a release of one permit of Redisson's per-channel semaphore
// does. Unlock is the latched unlock script, which publishes the message;
// its latch is left to its TTL. Waiters of a process are not queued: a
// woken waiter races the others and the releasing goroutine. Where the
// scripts SPUBLISH (floorPublish), the channel is SSUBSCRIBEd.
type pubsubFloor struct{}

func init() { Register(2, pubsubFloor{}) }

func (pubsubFloor) Name() string { return "floor: Redisson lock protocol and raw pub/sub (rueidis)" }

func (pubsubFloor) Open(ctx context.Context, addr string) (Session, error) {
	rc, publish, err := openFloor(ctx, addr, floorScript("acquire"), floorScript("unlock"))
	if err != nil {
		return nil, err
	}
	return &pubsubSession{cnt: newCountingClient(rc), id: keys.RequestID(), publish: publish, channels: map[string]*pubsubChannel{}}, nil
}

type pubsubSession struct {
	cnt     *countingClient
	id      string
	publish string // floorPublish; SPUBLISH goes with SSUBSCRIBE
	threads atomic.Int64

	mu       sync.Mutex
	channels map[string]*pubsubChannel
}

// pubsubChannel is one subscription: wake holds a permit per message not
// yet taken by a waiter.
type pubsubChannel struct {
	ready chan struct{} // closed once subscribed (err set on failure)
	err   error
	wake  chan struct{}
	conn  rueidis.DedicatedClient
	close func()
}

func (s *pubsubSession) IsContendedFloor()       { /* marker */ }
func (s *pubsubSession) Commands() (int64, bool) { return s.cnt.n.Load(), true }

func (s *pubsubSession) Close() error {
	s.mu.Lock()
	for _, ch := range s.channels {
		<-ch.ready
		if ch.close != nil {
			ch.close()
		}
	}
	s.mu.Unlock()
	s.cnt.Client.Close()
	return nil
}

func (s *pubsubSession) Mutex(name string) Mutex {
	return &pubsubMutex{s: s, name: name, channel: keys.LockChannel(name),
		owner: s.id + ":" + strconv.FormatInt(s.threads.Add(1), 10)}
}

// subscribe returns channel's subscription, made by the first waiter on
// its own dedicated connection; the others wait until it is confirmed.
func (s *pubsubSession) subscribe(ctx context.Context, channel string) (*pubsubChannel, error) {
	s.mu.Lock()
	ch, ok := s.channels[channel]
	if !ok {
		ch = &pubsubChannel{ready: make(chan struct{}), wake: make(chan struct{}, 1<<16)}
		s.channels[channel] = ch
	}
	s.mu.Unlock()
	if !ok {
		ch.conn, ch.close = s.cnt.Dedicate()
		ch.conn.SetPubSubHooks(rueidis.PubSubHooks{OnMessage: func(rueidis.PubSubMessage) {
			select {
			case ch.wake <- struct{}{}:
			default: // more permits than waiters: a waiter will find the lock free anyway
			}
		}})
		sub := ch.conn.B().Subscribe().Channel(channel).Build()
		if s.publish == "SPUBLISH" {
			sub = ch.conn.B().Ssubscribe().Channel(channel).Build()
		}
		ch.err = ch.conn.Do(ctx, sub).Error()
		close(ch.ready)
	}
	select {
	case <-ch.ready:
		return ch, ch.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pubsubMutex struct {
	s                    *pubsubSession
	name, channel, owner string
}

// Lock tries, and while the lock is held waits for a message or the TTL
// the acquire script answered, subscribing first.
func (m *pubsubMutex) Lock(ctx context.Context) error {
	ttl, err := m.try(ctx)
	if err != nil || ttl < 0 {
		return err
	}
	ch, err := m.s.subscribe(ctx, m.channel)
	if err != nil {
		return err
	}
	for {
		if ttl, err = m.try(ctx); err != nil || ttl < 0 {
			return err
		}
		t := time.NewTimer(ttl)
		select {
		case <-ch.wake:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		t.Stop()
	}
}

// try sends the acquire script: -1 when acquired, else the holder's TTL.
func (m *pubsubMutex) try(ctx context.Context) (time.Duration, error) {
	ms, err := floorAcquire(ctx, m.s.cnt, m.name, m.owner)
	if err != nil || ms < 0 {
		return -1, err
	}
	return time.Duration(max(ms, 1)) * time.Millisecond, nil
}

// Unlock is the latched unlock script, which publishes the release.
func (m *pubsubMutex) Unlock(ctx context.Context) error {
	_, err := floorUnlock(ctx, m.s.cnt, m.name, m.channel, m.owner, m.s.publish, keys.UnlockLatch(m.name, keys.RequestID()))
	return err
}
