package election

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/lockcore"
	"github.com/interlock-go/interlock/internal/renewal"
	"github.com/interlock-go/interlock/internal/report"
	"github.com/interlock-go/interlock/internal/script"
)

// ErrNoLeader is wrapped by the error of Leader when nobody holds the
// election's lock.
var ErrNoLeader = errors.New("election: no leader")

// renewTask renews leaders' holds together with their value keys.
var renewTask = &renewal.Task{Script: script.LeaderRenew(), Args: renewArgs, Lost: report.ErrLockLost, KeepLosses: true}

// renewArgs builds leader_renew's KEYS (each lock, then its value key) and
// ARGV for a chunk of holds of one slot.
func renewArgs(lease time.Duration, chunk []*renewal.Entry) (ks, argv []string) {
	ks = make([]string, 0, 2*len(chunk))
	argv = make([]string, len(chunk)+1)
	argv[0] = lockcore.MS(lease)
	for i, e := range chunk {
		ks = append(ks, e.Key, keys.LeaderValue(e.Key))
		argv[i+1] = e.Owner
	}
	return ks, argv
}

// kind is the fenced lock as an election holds it: Redisson's RFencedLock
// on the wire, whose acquisition also records the leader's value in the
// value key (Key(1)), whose renewal renews it and whose release deletes
// it. Acquire is set per campaign, as it carries the value; holds are
// never passed to another waiter of the process.
var kind = func() lockcore.Kind {
	k := lockcore.Reentrant(string(interlock.KindElection))
	k.Keys = []func(string) string{lockcore.Prefixed(keys.FenceTokenPrefix), keys.LeaderValue}
	k.KeyShapes = []lockcore.Shape{lockcore.ShapeCount, lockcore.ShapeNone}
	k.Reply = lockcore.ReplyToken
	k.Unlock = lockcore.Call{Script: script.LeaderUnlock,
		Keys: []lockcore.Arg{lockcore.Name, lockcore.Channel, lockcore.Latch, lockcore.Key(1)},
		Args: []lockcore.Arg{lockcore.Lit("0"), lockcore.Lease, lockcore.Owner, lockcore.Publish, lockcore.LatchTTL}}
	k.Transfer = nil
	k.Renew = renewTask
	return k
}()

// campaignKind is kind with the acquisition that records value.
func campaignKind(value string) *lockcore.Kind {
	k := kind
	k.Acquire = lockcore.Call{Script: script.LeaderAcquire,
		Keys: []lockcore.Arg{lockcore.Name, lockcore.Key(0), lockcore.Key(1)},
		Args: []lockcore.Arg{lockcore.Lease, lockcore.Owner, lockcore.Lit(value)}}
	return &k
}

// Option configures an Election.
type Option func(*options)

type options struct {
	recheck time.Duration
	err     error
}

// WithRecheck sets the longest time an Observe goes without reading the
// leader when no message arrives, at least 1ms (default: a third of the
// Client's watchdog timeout): the bound on how late it sees a change that
// announces nothing (a Java holder's re-entry).
func WithRecheck(d time.Duration) Option {
	return func(o *options) {
		if d < time.Millisecond && o.err == nil {
			o.err = lockcore.Invalid("recheck interval %v must be at least 1ms", d)
		}
		o.recheck = d
	}
}

// Election is the election called name on one Client: a candidate that
// campaigns on the fenced lock of that name, and a view of its leader. It
// is safe for concurrent use; one Election leads at most once at a time.
type Election struct {
	c       *interlock.Client
	l       lockcore.Common // for reads, resignation and guards
	owner   int64
	recheck time.Duration

	mu          sync.Mutex
	campaigning bool
	lead        *Leadership
}

// New returns the election called name: its leader holds the fenced lock
// name (Redisson's RFencedLock). Each Election is its own candidate. A bad
// name, option or a nil client is reported by every method, before
// anything is sent.
func New(c *interlock.Client, name string, opts ...Option) *Election {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	e := &Election{c: c, l: lockcore.New(c, &kind, name), owner: interlock.NewOwnerID(), recheck: o.recheck}
	e.l.Refuse(o.err)
	if rt := e.l.RT(); rt != nil && e.recheck == 0 {
		e.recheck = max(rt.Cfg.Watchdog/3, time.Millisecond)
	}
	return e
}

// Name returns the election's name as given: the name of its fenced lock.
func (e *Election) Name() string { return e.l.Name() }

// Leadership is one term of an Election's leadership.
type Leadership struct {
	ctx   context.Context
	token uint64
	value string
}

// Context returns a context that ends when the term ends: with cause
// interlock.ErrLockLost when leadership was lost (the lock expired or was
// taken), context.Canceled after Resign, interlock.ErrClosed with the
// Client (ErrNotHeld if it was lost before Campaign returned).
func (l *Leadership) Context() context.Context { return l.ctx }

// Token returns the term's fencing token: larger than that of every term
// before it, of Go and Java holders alike.
func (l *Leadership) Token() uint64 { return l.token }

// Value returns the value the term was campaigned with.
func (l *Leadership) Value() string { return l.value }

// Leader is the leader as read from Redis.
type Leader struct {
	// Value is the leader's campaign value, "" for a holder that records
	// none (a Java RFencedLock or RLock holder).
	Value string
	// Token is the fenced lock's token counter when it was read: the
	// leader's token, unless the holder took the lock as an RLock, which
	// takes none (then it is an earlier term's).
	Token uint64
	// Owner is the holder's owner string, "<client id>:<owner id>", as
	// Redisson writes it in the lock's hash.
	Owner string
}

// Campaign waits until this Election leads or ctx ends, and returns the
// term, with the value recorded for Leader and Observe. Another Campaign of
// this Election while one waits or leads is refused (ErrInvalid); on
// failure it returns ctx's error and leads nothing.
func (e *Election) Campaign(ctx context.Context, value string) (*Leadership, error) {
	if err := e.l.Ready(report.OpAcquire); err != nil {
		return nil, err
	}
	e.mu.Lock()
	if e.lead != nil && e.lead.ctx.Err() != nil {
		e.lead = nil // that term was lost
	}
	if e.campaigning || e.lead != nil {
		e.mu.Unlock()
		return nil, e.l.Invalid(report.OpAcquire, "this Election already campaigns or leads; Resign first")
	}
	e.campaigning = true
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.campaigning = false
		e.mu.Unlock()
	}()

	l := lockcore.New(e.c, campaignKind(value), e.l.Name())
	token, _, err := lockcore.Acquire(interlock.WithOwner(ctx, e.owner), &l, lockcore.Request{Forever: true})
	if err != nil {
		return nil, err
	}
	lead := &Leadership{ctx: e.l.Guard(interlock.WithOwner(context.Background(), e.owner)), token: token, value: value}
	e.mu.Lock()
	e.lead = lead
	e.mu.Unlock()
	e.announce(ctx, token)
	return lead, nil
}

// announce tells the election's observers of a new term on the election's
// channel. It is a hint only (observers re-check on their own), so its
// failure is not the campaign's.
func (e *Election) announce(ctx context.Context, token uint64) {
	rt := e.l.RT()
	pub, err := rt.PublishCommand(ctx)
	if err != nil {
		return
	}
	ch, msg := keys.LeaderChannel(e.l.Key()), strconv.FormatUint(token, 10)
	if pub == "SPUBLISH" {
		rt.RC.Do(ctx, rt.RC.B().Spublish().Channel(ch).Message(msg).Build())
		return
	}
	rt.RC.Do(ctx, rt.RC.B().Publish().Channel(ch).Message(msg).Build())
}

// Leading returns the current term of this Election, nil when it does not
// lead (or its last term has ended). It sends nothing.
func (e *Election) Leading() *Leadership {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.lead != nil && e.lead.ctx.Err() != nil {
		e.lead = nil
	}
	return e.lead
}

// Resign ends this Election's term: it releases the lock and deletes its
// value, waking the waiting candidates here and in Java. Without a term it
// returns an error wrapping interlock.ErrNotHeld (and ErrLockLost when the
// term was lost); with an ended ctx it still resigns, as Unlock does.
func (e *Election) Resign(ctx context.Context) error {
	e.mu.Lock()
	lead := e.lead
	e.lead = nil
	e.mu.Unlock()
	if lead == nil {
		if err := e.l.Ready(report.OpRelease); err != nil {
			return err
		}
		return e.l.OpErr(report.OpRelease, interlock.ErrNotHeld)
	}
	return e.l.Unlock(interlock.WithOwner(ctx, e.owner))
}

// Leader returns the current leader, whoever it is: a Go Election or a
// Java RFencedLock (or RLock) holder of the name. With no holder it returns
// an error wrapping ErrNoLeader.
func (e *Election) Leader(ctx context.Context) (Leader, error) {
	ld, _, ok, err := e.read(ctx)
	switch {
	case err != nil:
		return Leader{}, err
	case !ok:
		return Leader{}, e.l.OpErr(report.OpInspect, ErrNoLeader)
	}
	return ld, nil
}

// read reads the leader with leader_read, and the lock's PTTL (-1: none);
// ok is false when nobody leads.
func (e *Election) read(ctx context.Context) (ld Leader, pttl time.Duration, ok bool, err error) {
	if err := e.l.Ready(report.OpInspect); err != nil {
		return Leader{}, 0, false, err
	}
	name := e.l.Key()
	ks := []string{name, keys.Prefix(keys.FenceTokenPrefix, name), keys.LeaderValue(name)}
	res, err := e.l.ProbeScript(ctx, script.LeaderRead(), ks, nil)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		return Leader{}, 0, false, e.l.Fail(ctx, report.OpInspect, err)
	}
	reply, err := res.ToArray()
	if err != nil {
		return Leader{}, 0, false, e.l.OpErr(report.OpInspect, err)
	}
	if len(reply) == 1 {
		return Leader{}, 0, false, nil
	}
	if len(reply) != 5 {
		return Leader{}, 0, false, e.l.OpErr(report.OpInspect, errors.New("leader_read answered an unexpected reply"))
	}
	ms, err1 := reply[0].AsInt64()
	tok, err2 := reply[1].ToString()
	owner, err3 := reply[2].ToString()
	value, err4 := reply[3].ToString()
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return Leader{}, 0, false, e.l.OpErr(report.OpInspect, err)
	}
	t, err := strconv.ParseUint(tok, 10, 64)
	if err != nil {
		return Leader{}, 0, false, e.l.OpErr(report.OpInspect, lockcore.Invalid("the token counter holds %q, not a fencing token", tok))
	}
	return Leader{Value: value, Token: t, Owner: owner}, time.Duration(ms) * time.Millisecond, true, nil
}
