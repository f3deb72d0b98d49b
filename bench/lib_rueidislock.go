package main

import (
	"context"
	"errors"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// rueidis' rueidislock with its defaults: KeyMajority 2 (each lock is 3
// keys, a majority of 2 must be SET, one script run per key), KeyValidity
// 5 s extended every 2.5 s, TryNextAfter 20 ms, waiting through client-side
// caching invalidations (CLIENT TRACKING, NoLoopTracking off). Lock is
// WithContext (waits), Unlock calls the returned cancel function, which
// returns once every key is deleted. Commands are counted on the client side
// by wrapping the rueidis.Client through LockerOption.ClientBuilder.
type rueidislockLib struct{}

func init() { Register(40, rueidislockLib{}) }

func (rueidislockLib) Name() string { return "rueidislock" }

func (rueidislockLib) Open(_ context.Context, addr string) (Session, error) {
	s := &rueidislockSession{}
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption: rueidis.ClientOption{InitAddress: []string{addr}},
		ClientBuilder: func(o rueidis.ClientOption) (rueidis.Client, error) {
			rc, err := rueidis.NewClient(o)
			if err != nil {
				return nil, err
			}
			s.cnt = newCountingClient(rc)
			return s.cnt, nil
		},
	})
	if err != nil {
		return nil, err
	}
	s.l = l
	return s, nil
}

type rueidislockSession struct {
	l   rueidislock.Locker
	cnt *countingClient
}

func (s *rueidislockSession) Mutex(name string) Mutex { return &rueidislockMutex{l: s.l, name: name} }
func (s *rueidislockSession) Commands() (int64, bool) { return s.cnt.n.Load(), true }

func (s *rueidislockSession) Close() error {
	s.l.Close()
	return nil
}

type rueidislockMutex struct {
	l      rueidislock.Locker
	name   string
	cancel context.CancelFunc
}

func (m *rueidislockMutex) Lock(ctx context.Context) error {
	_, cancel, err := m.l.WithContext(ctx, m.name)
	if err != nil {
		return err
	}
	m.cancel = cancel
	return nil
}

func (m *rueidislockMutex) Unlock(context.Context) error {
	if m.cancel == nil {
		return errors.New("rueidislock: not held")
	}
	m.cancel()
	m.cancel = nil
	return nil
}
