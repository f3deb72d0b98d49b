// Package pubsub lets many goroutines of one process wait on Redis channels
// of your own through one shared subscription per channel: the Hub that an
// interlock Client runs for its lock waiters, for your own signals.
//
// A waiter subscribes before it checks the state it waits for, so that a
// change between the check and the subscription cannot be missed, and waits
// for a message or a timeout, whichever comes first:
//
//	sub, err := hub.Subscribe(ctx, "jobs:ready", false)
//	if err != nil {
//		return err
//	}
//	defer sub.Close()
//	for !ready() {
//		if err := sub.Wait(ctx, time.Second); err != nil {
//			return err
//		}
//	}
//
// Messages carry no data to the waiter; they wake it. The payload "0" wakes
// one waiter of the channel (the one waiting longest) or, when none waits,
// makes the next Wait return at once; any other payload wakes every waiter
// of the channel. These are Redisson's semantics, so a Java waiter on the
// same channel is woken alike. After a lost connection the Hub subscribes
// again, and wakes every waiter, since messages sent meanwhile were lost.
package pubsub

import (
	"context"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/pubsub"
)

// Errors returned by Subscribe and Wait.
var (
	// ErrClosed: the Hub has been closed.
	ErrClosed = pubsub.ErrClosed
	// ErrSubscriptionClosed: Wait on a Subscription that was closed.
	ErrSubscriptionClosed = pubsub.ErrSubscriptionClosed
)

// Hub shares one server subscription per channel among every Subscription
// to it. Its methods are safe for concurrent use.
type Hub struct{ h *pubsub.Hub }

// Option configures a Hub.
type Option func(*options)

type options struct{ list []pubsub.Option }

// WithReconnectBackoff sets the delay after the attempt-th (1, 2, ...)
// consecutive failed reconnection of a subscription connection; fn must be
// safe for concurrent use. The default starts at 25 ms and doubles up to 2 s.
func WithReconnectBackoff(fn func(attempt int) time.Duration) Option {
	return func(o *options) { o.list = append(o.list, pubsub.WithReconnectBackoff(fn)) }
}

// WithErrorHandler has fn told of background failures (a broken connection,
// a refused subscription), from the Hub's goroutines; fn must not block.
func WithErrorHandler(fn func(err error)) Option {
	return func(o *options) { o.list = append(o.list, pubsub.WithErrorHandler(fn)) }
}

// NewHub returns a Hub that subscribes through rc, a standalone, sentinel
// or cluster client, which it never closes; a nil handler is an error.
func NewHub(rc rueidis.Client, opts ...Option) (*Hub, error) {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	h, err := pubsub.NewHub(rc, o.list...)
	if err != nil {
		return nil, err
	}
	return &Hub{h}, nil
}

// Subscribe returns a Subscription to channel (SSUBSCRIBE if sharded, else
// SUBSCRIBE) once the server confirmed it, so that every later message
// reaches it. Close it when done.
func (h *Hub) Subscribe(ctx context.Context, channel string, sharded bool) (*Subscription, error) {
	s, err := h.h.Subscribe(ctx, channel, sharded)
	if err != nil {
		return nil, err
	}
	return &Subscription{s}, nil
}

// Close closes the Hub's subscription connections and returns once its
// goroutines have exited; Waits and Subscribes then return ErrClosed.
func (h *Hub) Close() { h.h.Close() }

// Subscription is one waiter's share of a channel's subscription.
type Subscription struct{ s *pubsub.Subscription }

// Wait returns nil once a message woke it or d has elapsed (d < 0: no limit),
// ctx.Err() when ctx ends first, and ErrSubscriptionClosed or ErrClosed.
func (s *Subscription) Wait(ctx context.Context, d time.Duration) error {
	err := s.s.Wait(ctx, d)
	s.s.Pass() // a wake-all's next waiter need not wait for this one's work
	return err
}

// Close gives the Subscription up, and the channel's server subscription
// with the last one.
func (s *Subscription) Close() { s.s.Close() }
