package main

import (
	"context"
	"flag"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/rlock"
	"github.com/interlock-go/interlock/rwlock"
)

// interlock with its defaults: one rueidis client (default options), one
// interlock.Client on it; Lock is a watchdog hold (30 s lease renewed every
// 10 s), waiting on the lock's pub/sub channel. S5 uses fairlock (default
// wait timeout 5 min), S6 the read half of rwlock. Commands are counted on
// the client side by wrapping the rueidis.Client given to interlock.New,
// including its dedicated pub/sub connection (SUBSCRIBE, UNSUBSCRIBE).
type interlockLib struct{}

// interlockWatchdog, when set, is the interlock Clients' watchdog timeout
// (interlock.WithWatchdogTimeout): a renewal round every third of it.
var interlockWatchdog = flag.Duration("interlock-watchdog", 0, "interlock's watchdog timeout (0: its default, 30s)")

func init() { Register(10, interlockLib{}) }

func (interlockLib) Name() string { return "interlock" }

func (interlockLib) Open(_ context.Context, addr string) (Session, error) {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		return nil, err
	}
	cnt := newCountingClient(rc)
	var opts []interlock.Option
	if *interlockWatchdog > 0 {
		opts = append(opts, interlock.WithWatchdogTimeout(*interlockWatchdog))
	}
	c, err := interlock.New(cnt, opts...)
	if err != nil {
		rc.Close()
		return nil, err
	}
	return &interlockSession{rc: rc, cnt: cnt, c: c}, nil
}

type interlockSession struct {
	rc  rueidis.Client
	cnt *countingClient
	c   *interlock.Client
}

func (s *interlockSession) Mutex(name string) Mutex     { return rlock.New(s.c, name) }
func (s *interlockSession) FairMutex(name string) Mutex { return fairlock.New(s.c, name) }
func (s *interlockSession) ReadMutex(name string) Mutex { return rwlock.New(s.c, name).Read() }
func (s *interlockSession) Commands() (int64, bool)     { return s.cnt.n.Load(), true }

func (s *interlockSession) Close() error {
	err := s.c.Close()
	s.rc.Close()
	return err
}
