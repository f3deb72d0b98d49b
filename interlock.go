package interlock

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/report"
	"github.com/interlock-go/interlock/internal/runtime"
)

// The engine cannot import this package: it reaches a Client's Runtime,
// and makes its errors *Error, through these two.
func init() {
	runtime.Of = func(c any) *runtime.Runtime {
		if c, ok := c.(*Client); ok && c != nil {
			return c.rt
		}
		return nil
	}
	report.Wrap = wrap
}

// Client is the process-side half of every lock: the client id in lock
// hash fields, the subscriptions waiters share and the watchdog that keeps
// holds alive. Create one per rueidis.Client and share it; it is safe for
// concurrent use.
type Client struct {
	rt *runtime.Runtime
}

// New returns a Client that runs its locks through rc, which the caller
// keeps and closes. Standalone, sentinel and cluster clients all work;
// outside a cluster the Client's scripts share one of rc's connections, in
// the order they were called, and from its first script its watchdog
// renewals take one of rc's dedicated connections (Dedicate), one per
// master on a cluster. A cluster client is fastest with one connection per
// node, rueidis's default (PipelineMultiplex 0), which the Client checks
// with 32 CLIENT IDs at its first Lock. New starts the Client's goroutines
// and sends nothing to Redis.
func New(rc rueidis.Client, opts ...Option) (*Client, error) {
	if rc == nil {
		return nil, newErr(fmt.Errorf("%w: nil rueidis client", ErrInvalid))
	}
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, newErr(err)
	}
	cfg.applyObserver()
	rt, err := runtime.New(rc, cfg.Config)
	if err != nil {
		return nil, newErr(fmt.Errorf("%w: %w", ErrInvalid, err))
	}
	return &Client{rt: rt}, nil
}

// ID returns the client id, a random lower-case UUID v4: the first half of
// every owner string, as RedissonClient.getId() is.
func (c *Client) ID() string { return c.rt.ID }

// Owner returns the owner string for ctx, "<client id>:<owner id>": the
// hash field Redisson writes for a holder (see OwnerID).
func (c *Client) Owner(ctx context.Context) (string, error) {
	owner, err := c.rt.Owner(ctx)
	if err != nil {
		return "", &Error{Kind: KindClient, Op: OpOwner, Err: err}
	}
	return owner, nil
}

// ClockSkew measures how far the Redis server's clock (TIME) is ahead of
// this machine's, to within half a round trip.
func (c *Client) ClockSkew(ctx context.Context) (time.Duration, error) {
	skew, err := c.rt.ClockSkew(ctx)
	if err != nil && ctx.Err() == nil {
		return 0, &Error{Kind: KindClient, Op: OpInspect, Err: err}
	}
	return skew, err
}

// newErr is the *Error of New.
func newErr(err error) error { return &Error{Kind: KindClient, Op: OpNew, Err: err} }

// Stats is a snapshot of what a Client keeps in memory.
type Stats struct {
	// Holds counts the (lock, owner) pairs the Client holds and renews.
	Holds int
	// Channels counts the pub/sub channels its waiters are subscribed to.
	Channels int
	// UndoQueue counts the (lock, owner) pairs with clean-up still pending
	// (see "Holds" in the package documentation).
	UndoQueue int
	// Waiters counts the calls (acquisitions, latch awaits) waiting now:
	// past a first try that failed, or queued behind this Client's waiters.
	Waiters int
	// Transfers counts, since New, the unlocks that passed a lock to a
	// waiter of this Client in their own round trip ("Hand-off" in the
	// package documentation).
	Transfers uint64
}

// Stats returns a snapshot of the Client's records. It sends nothing.
func (c *Client) Stats() Stats {
	return Stats{Holds: c.rt.Renewal.Len(), Channels: c.rt.Hub.Channels(), UndoQueue: c.rt.UndoQueue(),
		Waiters: int(c.rt.Waiters().Load()), Transfers: c.rt.Transfers.Passed()}
}

// HoldAge is how long the oldest current hold of a kind, or of one
// synchronizer, has been held (OldestHolds).
type HoldAge struct {
	Kind Kind
	Name string // as the caller gave it; empty when not by name
	// Age is the time since the hold's owner first acquired it (its
	// outermost acquisition, as Event.Held counts).
	Age time.Duration
}

// OldestHolds returns the age of the oldest hold this Client keeps now of
// each kind, or (byName) of each synchronizer, oldest first: a hold far
// older than its work takes is a stuck holder. It sends nothing, and walks
// every hold: call it at a metrics reader's pace, not per operation.
// Holds are known by kind and name only with an Observer (WithObserver,
// WithLogger); without one they count under an empty Kind, named by key.
func (c *Client) OldestHolds(byName bool) []HoldAge {
	now := time.Now()
	oldest := c.rt.Renewal.Oldest(byName)
	idx := make(map[HoldAge]int, len(oldest))
	out := make([]HoldAge, 0, len(oldest))
	for n, since := range oldest {
		k := HoldAge{Kind: Kind(n.Kind), Name: n.Name}
		if byName && k.Name == "" {
			k.Name = n.Key
			if m := c.rt.Cfg.Names; m != nil {
				k.Name = m.Unmap(n.Key)
			}
		}
		age := now.Sub(since)
		if i, ok := idx[k]; ok {
			out[i].Age = max(out[i].Age, age)
			continue
		}
		idx[k] = len(out)
		k.Age = age
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b HoldAge) int {
		return cmp.Or(cmp.Compare(b.Age, a.Age), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// Close stops every goroutine and subscription the Client started and
// returns once they have exited; it never closes the rueidis client. Holds
// still held are no longer renewed, and their guards are cancelled with
// ErrClosed. It is safe to call more than once.
func (c *Client) Close() error {
	c.rt.Close()
	return nil
}
