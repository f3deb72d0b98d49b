package multilock

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/guard"
	"github.com/interlock-go/interlock/internal/lockcore"
	"github.com/interlock-go/interlock/internal/wait"
	"github.com/interlock-go/interlock/nonreentrant"
	"github.com/interlock-go/interlock/rwlock"
)

var _ interlock.Locker = (*Mutex)(nil)

const (
	// roundPerMember is Redisson's base wait of one Lock round, per member.
	roundPerMember = 1500 * time.Millisecond
	// undoTimeout bounds the unlocks that take back a failed gathering,
	// and Unlock, which run even when the caller's context has ended:
	// lockcore.ReleaseTimeout, which bounds each member's own.
	undoTimeout = lockcore.ReleaseTimeout
	// reletTimeout bounds the round trip that gives a member the lease
	// once all are gathered.
	reletTimeout = time.Second
	// errorPause is the first pause after a round that failed with errors
	// rather than a busy member, doubled up to maxErrorPause.
	errorPause    = 50 * time.Millisecond
	maxErrorPause = time.Second
	// Past its wait, a member's last try gets a quarter of the wait, at
	// least minLastTry (a round trip a healthy server answers: a try cut
	// short in flight can run after its undo) and at most maxLastTry.
	minLastTry = 20 * time.Millisecond
	maxLastTry = 250 * time.Millisecond
)

// Mutex holds a set of locks together: all of them (New, Redisson's
// RedissonMultiLock) or a majority (NewRedLock, Redisson's
// RedissonRedLock). It adds no keys or messages; each member does its own
// kind's traffic under the calling owner. It is an interlock.Locker, so a
// multi-lock can be a member of another, or taken with interlock.Lock. It
// is safe for concurrent use.
type Mutex struct {
	members []interlock.Locker
	quorum  int            // how many members a hold needs
	kind    interlock.Kind // KindMultiLock or KindRedLock, in its errors
	err     error          // the argument error every method returns

	mu     sync.Mutex
	shared map[<-chan struct{}]*quorumGuard // a RedLock's guards of parents that never end
}

// New returns the lock of all of members, which are tried in the order
// given. Members may be of any kinds and on any Clients. No members, a nil
// member, or one lock given twice is reported by every method.
func New(members ...interlock.Locker) *Mutex {
	m := &Mutex{members: slices.Clone(members), quorum: len(members), kind: interlock.KindMultiLock}
	m.err = m.check()
	return m
}

// NewRedLock returns the lock of a majority of members, each on its own
// Client (an independent master). Fewer than 3 members, two on one
// Client, or New's bad input is reported by every method.
func NewRedLock(members ...interlock.Locker) *Mutex {
	m := &Mutex{members: slices.Clone(members), quorum: len(members)/2 + 1, kind: interlock.KindRedLock}
	if m.err = m.check(); m.err == nil && len(members) < 3 {
		m.err = m.invalid("%d members; a RedLock needs at least 3 independent masters", len(members))
	}
	return m
}

// invalid returns an argument error, which ready and opErr make the
// *interlock.Error of an operation.
func (m *Mutex) invalid(format string, args ...any) error { return lockcore.Invalid(format, args...) }

// ready returns the argument error of New or NewRedLock as the error of op.
func (m *Mutex) ready(op interlock.Op) error {
	if m.err != nil {
		return m.opErr(op, m.err)
	}
	return nil
}

// opErr is the *interlock.Error of the lock's operation op; context errors,
// a closed Client and a member's own *interlock.Error are returned as
// themselves.
func (m *Mutex) opErr(op interlock.Op, err error) error {
	var wrapped *interlock.Error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, interlock.ErrClosed), errors.As(err, &wrapped):
		return err
	}
	return &interlock.Error{Kind: m.kind, Op: op, Name: m.Name(), Err: err}
}

// joined is the error of operation op that errs (the members' errors, a
// gathering's undo's) add up to: nil when all are nil, the one error as
// opErr returns it, or an *interlock.Error of the lock wrapping them all,
// each kept as it is (errors.Is and errors.As see every one). An error
// joined earlier for the same operation is joined again flat.
func (m *Mutex) joined(op interlock.Op, errs ...error) error {
	var flat []error
	for _, err := range errs {
		if e, ok := err.(*interlock.Error); ok && e.Kind == m.kind && e.Op == op && e.Name == m.Name() {
			if j, ok := e.Err.(interface{ Unwrap() []error }); ok {
				flat = append(flat, j.Unwrap()...)
				continue
			}
		}
		if err != nil {
			flat = append(flat, err)
		}
	}
	switch len(flat) {
	case 0:
		return nil
	case 1:
		return m.opErr(op, flat[0])
	}
	return &interlock.Error{Kind: m.kind, Op: op, Name: m.Name(), Err: errors.Join(flat...)}
}

// check finds the bad input New and NewRedLock refuse.
func (m *Mutex) check() error {
	if len(m.members) == 0 {
		return m.invalid("no members")
	}
	for i, a := range m.members {
		if isNil(a) {
			return m.invalid("member %d is nil", i)
		}
		for _, b := range m.members[:i] {
			if same(a, b) {
				return m.invalid("%q is a member twice", a.Name())
			}
			if m.kind == interlock.KindRedLock && sameClient(a, b) {
				return m.invalid("%q and %q are on one Client; a RedLock's members must be on independent masters", b.Name(), a.Name())
			}
		}
	}
	return nil
}

// isNil reports whether l is nil, or a nil pointer in an interface.
func isNil(l interlock.Locker) bool {
	return l == nil || (reflect.ValueOf(l).Kind() == reflect.Pointer && reflect.ValueOf(l).IsNil())
}

// same reports whether a and b are one lock: one key through one Client.
func same(a, b interlock.Locker) bool {
	ca, okA := lockcore.MemberOf(a)
	cb, okB := lockcore.MemberOf(b)
	if okA && okB {
		return lockcore.SameLock(ca, cb)
	}
	return reflect.TypeOf(a) == reflect.TypeOf(b) && reflect.TypeOf(a).Comparable() && a == b
}

func sameClient(a, b interlock.Locker) bool {
	ca, okA := lockcore.MemberOf(a)
	cb, okB := lockcore.MemberOf(b)
	return okA && okB && lockcore.SameClient(ca, cb)
}

// Members returns the members, in the order they are tried.
func (m *Mutex) Members() []interlock.Locker { return slices.Clone(m.members) }

// Name returns the members' names, comma-separated, for logs and errors.
func (m *Mutex) Name() string {
	names := make([]string, len(m.members))
	for i, l := range m.members {
		if !isNil(l) {
			names[i] = l.Name()
		}
	}
	return strings.Join(names, ",")
}

// Lock waits until the members are held or ctx ends, in rounds of
// 1.5s per member, each member with a watchdog hold. On failure it
// returns ctx's error and leaves nothing held; a ctx that has ended
// already sends nothing.
func (m *Mutex) Lock(ctx context.Context) error {
	return m.lock(ctx, 0)
}

// LockLease is Lock with a fixed lease of at least 1ms, which every member
// is given once all are held.
func (m *Mutex) LockLease(ctx context.Context, lease time.Duration) error {
	if lease < time.Millisecond {
		return m.opErr(interlock.OpAcquire, m.invalid("lease %v must be at least 1ms", lease))
	}
	return m.lock(ctx, lease)
}

// TryLock tries for up to wait (0: one attempt per member) and reports
// whether it acquired; lease 0 gives the members watchdog holds. Busy when
// wait has passed is (false, nil), or the last member error when members
// failed rather than being busy. A member whose master answered it during
// its wait is busy, not failed, when its last try is cut short by the
// member's bound (see the package doc); one whose master answered nothing
// fails with an error that says so.
func (m *Mutex) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	if err := m.ready(interlock.OpAcquire); err != nil {
		return false, err
	}
	if wait < 0 || lease < 0 || (lease > 0 && lease < time.Millisecond) {
		return false, m.opErr(interlock.OpAcquire, m.invalid("wait %v and lease %v must not be negative, and a lease at least 1ms", wait, lease))
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	return m.try(ctx, wait, lease)
}

// lock runs TryLock rounds, as Redisson's lock does.
func (m *Mutex) lock(ctx context.Context, lease time.Duration) error {
	if err := m.ready(interlock.OpAcquire); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	base := time.Duration(len(m.members)) * roundPerMember
	pause := errorPause
	for {
		w := base
		switch {
		case lease <= 0:
		case lease <= base:
			w = lease/2 + rand.N(lease-lease/2)
		default:
			w = base + rand.N(lease-base)
		}
		w = max(w, time.Millisecond)
		start := time.Now()
		ok, err := m.try(ctx, w, lease)
		switch {
		case ok:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil && permanent(err):
			return err
		case err != nil && time.Since(start) < w:
			// Members failed rather than waited: do not spin on them.
			if err := wait.Pause(ctx, pause); err != nil {
				return err
			}
			pause = min(2*pause, maxErrorPause)
		default:
			pause = errorPause
		}
	}
}

// try is Redisson's tryLock(wait, lease): members in order, each for what
// is left of wait (a RedLock: wait/n), taken back and started again while
// time is left when one fails beyond what the quorum allows.
func (m *Mutex) try(ctx context.Context, wait, lease time.Duration) (bool, error) {
	n := len(m.members)
	memberLease := lease
	if lease > 0 && wait > 0 {
		// Members taken early must outlive the gathering; each gets lease
		// once all are held.
		memberLease = 2 * wait
	}
	var deadline time.Time
	perWait := wait
	if wait > 0 {
		deadline = time.Now().Add(wait)
		if m.quorum < n {
			perWait = max(wait/time.Duration(n), time.Millisecond)
		}
	}
	allowFail := n - m.quorum
	budget := allowFail
	var (
		held    []interlock.Locker
		lastErr error
	)
	for i := 0; i < n; i++ {
		member := m.members[i]
		w := time.Duration(0)
		if wait > 0 {
			w = max(min(perWait, time.Until(deadline)), time.Millisecond)
		}
		ok, err := m.tryMember(ctx, member, w, memberLease)
		switch {
		case ok:
			held = append(held, member)
		case ctx.Err() != nil || (err != nil && permanent(err)):
			return false, m.joined(interlock.OpAcquire, append([]error{err}, m.release(ctx, held)...)...)
		default:
			if err != nil {
				lastErr = err
			}
			if n-len(held) == allowFail {
				i = n // the rest may fail: a RedLock's quorum is held
				continue
			}
			if budget == 0 {
				// More members failed than the quorum allows.
				if uerrs := m.release(ctx, held); len(uerrs) > 0 {
					return false, m.joined(interlock.OpAcquire, append([]error{lastErr}, uerrs...)...)
				}
				if wait <= 0 || !time.Now().Before(deadline) {
					return false, m.joined(interlock.OpAcquire, lastErr)
				}
				budget, held, i = allowFail, held[:0], -1
				continue
			}
			budget--
		}
		if wait > 0 && !time.Now().Before(deadline) {
			return false, m.joined(interlock.OpAcquire, append([]error{lastErr}, m.release(ctx, held)...)...)
		}
	}
	if lease > 0 {
		var err error
		if held, err = m.relet(ctx, held, lease); err != nil || len(held) < m.quorum {
			return false, m.joined(interlock.OpAcquire, append([]error{err}, m.release(ctx, held)...)...)
		}
	}
	return true, nil
}

// tryMember tries one member for up to w. The attempt is bounded by w too,
// with a little slack for its last try: a frozen master must not hold the
// gathering past its wait. The bound tells a busy member from a master
// that does not answer by the member's first try, made alone: a master
// that answered it was there during the wait, and a member whose wait
// then ran out with its last try's answer still to come (a loaded
// machine's late wake-up, a slow reply) is busy, as a lock still held by
// another owner when the wait ran out is. Only a master that answered
// nothing within the bound makes it an error. The try cut short is taken
// back by its Client's clean-up, as every try whose reply was lost is.
func (m *Mutex) tryMember(ctx context.Context, member interlock.Locker, w, lease time.Duration) (bool, error) {
	if w <= 0 {
		return member.TryLock(ctx, 0, lease)
	}
	start := time.Now()
	mctx, cancel := context.WithTimeout(ctx, w+min(max(w/4, minLastTry), maxLastTry))
	defer cancel()
	ok, err := member.TryLock(mctx, 0, lease)
	if err != nil && ctx.Err() == nil && mctx.Err() != nil {
		// Not the caller's deadline: say so, and do not wrap it.
		err = m.opErr(interlock.OpAcquire, fmt.Errorf("member %s: no answer within the member's wait of %v (%v)", member.Name(), w, err))
	}
	if ok || err != nil {
		return ok, err
	}
	rest := w - time.Since(start)
	if rest < time.Millisecond {
		return false, nil // busy, and its wait used up by the answer
	}
	ok, err = member.TryLock(mctx, rest, lease)
	if err != nil && ctx.Err() == nil && mctx.Err() != nil {
		return false, nil // busy: the master answered, its last try came late
	}
	return ok, err
}

// relet gives every held member lease, and returns those still held.
func (m *Mutex) relet(ctx context.Context, held []interlock.Locker, lease time.Duration) ([]interlock.Locker, error) {
	kept := held[:0]
	var lost error
	for i, member := range held {
		c, ok := lockcore.MemberOf(member)
		if !ok {
			kept = append(kept, member) // it keeps the lease it was taken with
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, reletTimeout)
		still, err := lockcore.Relet(rctx, c, lease)
		cancel()
		switch {
		case err != nil && m.quorum < len(m.members) && ctx.Err() == nil:
			// A RedLock member whose master does not answer keeps the
			// lease it was taken with.
			kept = append(kept, member)
		case err != nil:
			// kept shares held's array, but never past i: held[i:] is
			// this member and those not yet given the lease.
			return kept, m.joined(interlock.OpAcquire, append([]error{err}, m.release(ctx, held[i:])...)...)
		case still:
			kept = append(kept, member)
		default:
			lost = m.opErr(interlock.OpAcquire, fmt.Errorf("member %s: %w", member.Name(), interlock.ErrLockLost))
		}
	}
	if len(kept) < m.quorum {
		return kept, lost
	}
	return kept, nil
}

// release unlocks members, all of them even when ctx has ended, and
// returns the errors of those that failed.
func (m *Mutex) release(ctx context.Context, members []interlock.Locker) []error {
	if len(members) == 0 {
		return nil
	}
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
	defer cancel()
	return slices.DeleteFunc(unlockAll(uctx, members), func(err error) bool { return err == nil })
}

// unlockAll unlocks members side by side, each with ctx, so that one whose
// master does not answer neither delays the others nor uses up their
// time. It returns their errors in member order, or only the error of a
// bad owner id, which fails them all alike.
func unlockAll(ctx context.Context, members []interlock.Locker) []error {
	errs := make([]error, len(members))
	switch len(members) {
	case 0:
		return nil
	case 1:
		errs[0] = members[0].Unlock(ctx)
		return errs
	}
	// The unlocks run on goroutines of their own: they carry the
	// caller's owner, which may be the calling goroutine.
	id, err := interlock.OwnerID(ctx)
	if err != nil {
		return []error{err}
	}
	octx := interlock.WithOwner(ctx, id)
	var wg sync.WaitGroup
	for i, member := range members {
		wg.Go(func() { errs[i] = member.Unlock(octx) })
	}
	wg.Wait()
	return errs
}

// Unlock releases one hold of every member, going on past failures: its
// error is a member's, or an *interlock.Error of the lock wrapping those
// of several members. A RedLock unlocks only the members its Clients
// record as held by the owner, and fails with interlock.ErrNotHeld when there are
// none. Like interlock.Locker's Unlock, it still releases given a ctx
// that has already ended, for up to 5s.
func (m *Mutex) Unlock(ctx context.Context) error {
	if err := m.ready(interlock.OpRelease); err != nil {
		return err
	}
	ctx, cancel := lockcore.Detach(ctx)
	defer cancel()
	var todo []interlock.Locker
	for _, member := range m.members {
		if m.quorum < len(m.members) && !recorded(ctx, member) {
			// A RedLock member this Client holds nothing of: the server
			// would answer "not held", or, frozen, not at all.
			continue
		}
		todo = append(todo, member)
	}
	var errs []error
	released := 0
	for _, err := range unlockAll(ctx, todo) {
		switch {
		case err == nil:
			released++
		case m.quorum < len(m.members) && errors.Is(err, interlock.ErrNotHeld):
		default:
			errs = append(errs, err)
		}
	}
	if released == 0 && len(errs) == 0 {
		return m.opErr(interlock.OpRelease, interlock.ErrNotHeld)
	}
	return m.joined(interlock.OpRelease, errs...)
}

// Extend gives every member the new lease, as interlock.Locker's Extend
// does one lock, side by side, and fails with interlock.ErrNotHeld (each
// member's error) when a member is gone (a RedLock: when fewer than a
// majority are still held). Nothing is sent when this process already
// knows a member is gone; a member found gone by its server leaves the
// others with the new lease until Unlock releases them.
func (m *Mutex) Extend(ctx context.Context, lease time.Duration) error {
	if err := m.ready(interlock.OpExtend); err != nil {
		return err
	}
	if lease < time.Millisecond {
		return m.opErr(interlock.OpExtend, m.invalid("lease %v must be at least 1ms", lease))
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// The members are extended on goroutines of their own: they carry the
	// caller's owner, which may be the calling goroutine.
	id, err := interlock.OwnerID(ctx)
	if err != nil {
		return err
	}
	ctx = interlock.WithOwner(ctx, id)
	var held, gone []interlock.Locker
	for _, member := range m.members {
		if recorded(ctx, member) {
			held = append(held, member)
		} else {
			gone = append(gone, member)
		}
	}
	extend := func(ctx context.Context, l interlock.Locker) (bool, error) { return true, l.Extend(ctx, lease) }
	if len(held) < m.quorum {
		_, errs := each(ctx, gone, extend) // each sends nothing, and says why
		return m.joined(interlock.OpExtend, errs...)
	}
	_, errs := each(ctx, held, extend)
	extended := 0
	for _, err := range errs {
		if err == nil {
			extended++
		}
	}
	if extended >= m.quorum {
		return nil
	}
	return m.joined(interlock.OpExtend, errs...)
}

// Guard returns a context that ends when the calling owner's hold ends:
// when a member (a RedLock: more than a minority) is lost or released,
// with that member's cause; at once when the owner does not hold it. A
// member of one of interlock's kinds that is lost names itself in the
// cause: an *interlock.Error of its Kind and name, with Op OpLost, wrapping
// its loss (interlock.ErrLockLost and the reason).
func (m *Mutex) Guard(ctx context.Context) context.Context {
	if err := m.ready(interlock.OpGuard); err != nil {
		return cancelled(ctx, err)
	}
	if m.quorum == len(m.members) {
		// Nested guards: the first member to end cancels every one inside
		// it, with its own cause, before the call that ended it returns.
		g := ctx
		for _, member := range slices.Backward(m.members) {
			g = memberGuard(g, member)
		}
		return g
	}
	// A RedLock's guard counts the members' ends; the one that leaves
	// fewer than a quorum held cancels it with its own cause.
	if _, shared := guard.Base(ctx); shared {
		return m.sharedGuard(ctx)
	}
	g, cancel := context.WithCancelCause(ctx)
	q := &quorumGuard{left: len(m.members) - m.quorum + 1, cancel: cancel}
	for _, member := range m.members {
		mg := memberGuard(g, member)
		context.AfterFunc(mg, func() { q.ended(context.Cause(mg)) })
	}
	return g
}

// memberGuard is member's guard of ctx, whose loss names the member when
// it is one of interlock's kinds (lockcore.MemberGuard).
func memberGuard(ctx context.Context, member interlock.Locker) context.Context {
	if c, ok := lockcore.MemberOf(member); ok {
		return lockcore.MemberGuard(ctx, c)
	}
	return member.Guard(ctx)
}

// sharedGuard is a RedLock's Guard of a parent that never ends. The
// members' guards of such a parent are shared by every call (package
// guard), and so is the quorum guard that counts them: repeated calls
// during one hold register nothing new.
func (m *Mutex) sharedGuard(ctx context.Context) context.Context {
	var live []context.Context
	var ended []error
	for _, member := range m.members {
		mg := memberGuard(ctx, member)
		if mg.Err() != nil {
			ended = append(ended, context.Cause(mg))
		} else {
			live = append(live, mg)
		}
	}
	left := len(m.members) - m.quorum + 1 - len(ended)
	if left <= 0 {
		return cancelled(ctx, ended[len(m.members)-m.quorum])
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := live[0].Done()
	if q := m.shared[k]; q != nil && q.counts(live) {
		return guard.View(ctx, q.ctx)
	}
	g, cancel := context.WithCancelCause(context.Background())
	q := &quorumGuard{left: left, cancel: cancel, ctx: g}
	for _, mg := range live {
		q.dones = append(q.dones, mg.Done())
		context.AfterFunc(mg, func() { q.ended(context.Cause(mg)) })
	}
	if m.shared == nil {
		m.shared = make(map[<-chan struct{}]*quorumGuard)
	}
	m.shared[k] = q
	context.AfterFunc(g, func() {
		m.mu.Lock()
		if m.shared[k] == q {
			delete(m.shared, k)
		}
		m.mu.Unlock()
	})
	return guard.View(ctx, g)
}

// cancelled returns a context derived from ctx that has ended with cause.
func cancelled(ctx context.Context, cause error) context.Context {
	g, cancel := context.WithCancelCause(ctx)
	cancel(cause)
	return g
}

// quorumGuard ends a RedLock's guard when the members' ends leave fewer
// than a quorum held.
type quorumGuard struct {
	mu     sync.Mutex
	left   int // member ends until the quorum is broken
	cancel context.CancelCauseFunc

	ctx   context.Context   // a shared guard's, with the members it counts:
	dones []<-chan struct{} // their guards' Done channels
}

// counts reports whether q is the shared guard of members.
func (q *quorumGuard) counts(members []context.Context) bool {
	return slices.EqualFunc(q.dones, members, func(d <-chan struct{}, mg context.Context) bool {
		return d == mg.Done()
	})
}

func (q *quorumGuard) ended(cause error) {
	q.mu.Lock()
	q.left--
	tip := q.left == 0
	q.mu.Unlock()
	if tip {
		q.cancel(cause)
	}
}

// Remaining returns how long the calling owner's hold is certainly valid:
// the shortest member's (a RedLock: the quorum-th longest), 0 when none.
func (m *Mutex) Remaining(ctx context.Context) time.Duration {
	if m.err != nil {
		return 0
	}
	left := make([]time.Duration, len(m.members))
	for i, member := range m.members {
		left[i] = member.Remaining(ctx)
	}
	slices.Sort(left)
	slices.Reverse(left)
	return left[m.quorum-1]
}

// IsHeld reports whether the calling owner holds the lock: every member,
// or a RedLock's majority.
func (m *Mutex) IsHeld(ctx context.Context) (bool, error) {
	if err := m.ready(interlock.OpInspect); err != nil {
		return false, err
	}
	held := 0
	var errs []error
	for _, member := range m.members {
		if m.quorum < len(m.members) && (held >= m.quorum || !recorded(ctx, member)) {
			continue // a RedLock asks only the members it took, until a majority
		}
		ok, err := member.IsHeld(ctx)
		if err != nil {
			errs = append(errs, err)
		} else if ok {
			held++
		}
	}
	if held >= m.quorum {
		return true, nil
	}
	return false, m.joined(interlock.OpInspect, errs...)
}

// ForceUnlock deletes every member whoever holds it, as each member's
// ForceUnlock does (waking its waiters), side by side and past failures,
// and reports whether any member was locked. This Client's holds of the
// members are lost. (Redisson's multi-locks do not support it.)
func (m *Mutex) ForceUnlock(ctx context.Context) (bool, error) {
	if err := m.ready(interlock.OpForceUnlock); err != nil {
		return false, err
	}
	deleted, errs := each(ctx, m.members, func(ctx context.Context, l interlock.Locker) (bool, error) {
		return l.ForceUnlock(ctx)
	})
	return slices.Contains(deleted, true), m.joined(interlock.OpForceUnlock, errs...)
}

// IsLocked reports whether anyone holds the lock in part: a member (a
// RedLock: more than a minority), whichever owners hold them, so that an
// acquisition would have to wait. A member that fails counts only when
// the answer depends on it; then the error comes back.
func (m *Mutex) IsLocked(ctx context.Context) (bool, error) {
	if err := m.ready(interlock.OpInspect); err != nil {
		return false, err
	}
	locked, errs := each(ctx, m.members, func(ctx context.Context, l interlock.Locker) (int64, error) {
		ok, err := l.IsLocked(ctx)
		if ok {
			return 1, err
		}
		return 0, err
	})
	n, err := m.settle(locked, errs, m.blocking())
	return n == 1, err
}

// HoldCount returns the calling owner's holds of the lock as the servers
// count them: the fewest of any member (a RedLock: the most a majority
// all have), 0 when it holds none. A member that fails counts only when
// the answer depends on it; then the error comes back.
func (m *Mutex) HoldCount(ctx context.Context) (int, error) {
	if err := m.ready(interlock.OpInspect); err != nil {
		return 0, err
	}
	// The members are asked on goroutines of their own: they carry the
	// caller's owner, which may be the calling goroutine.
	id, err := interlock.OwnerID(ctx)
	if err != nil {
		return 0, err
	}
	counts, errs := each(interlock.WithOwner(ctx, id), m.members, func(ctx context.Context, l interlock.Locker) (int64, error) {
		n, err := l.HoldCount(ctx)
		return int64(n), err
	})
	n, err := m.settle(counts, errs, m.quorum)
	return int(n), err
}

// TTL returns how long the lock stays taken unless renewed or released:
// the longest time to live among the members (a RedLock: the time until
// no more than a minority are locked), 0 when it is not locked (IsLocked),
// interlock.NoExpiry when that member's key never expires. A member that
// fails counts only when the answer depends on it; then the error comes
// back.
func (m *Mutex) TTL(ctx context.Context) (time.Duration, error) {
	if err := m.ready(interlock.OpInspect); err != nil {
		return 0, err
	}
	ttls, errs := each(ctx, m.members, func(ctx context.Context, l interlock.Locker) (int64, error) {
		d, err := l.TTL(ctx)
		if d == interlock.NoExpiry {
			return math.MaxInt64, err
		}
		return int64(d), err
	})
	d, err := m.settle(ttls, errs, m.blocking())
	if d == math.MaxInt64 {
		return interlock.NoExpiry, err
	}
	return time.Duration(d), err
}

// blocking is how many members locked by others keep the lock from being
// taken: one of a multi-lock, a minority plus one of a RedLock's.
func (m *Mutex) blocking() int { return len(m.members) - m.quorum + 1 }

// settle returns the r-th largest of the members' answers, 0 and more,
// when the members that failed (errs) cannot change it whatever their
// answer would have been; otherwise 0 and the members' errors.
func (m *Mutex) settle(answers []int64, errs []error, r int) (int64, error) {
	low, high := slices.Clone(answers), slices.Clone(answers)
	for i, err := range errs {
		if err != nil {
			low[i], high[i] = 0, math.MaxInt64
		}
	}
	slices.Sort(low)
	slices.Sort(high)
	at := len(answers) - r
	if low[at] != high[at] {
		return 0, m.joined(interlock.OpInspect, errs...)
	}
	return low[at], nil
}

// each calls f for every member side by side, with ctx, so that a master
// that does not answer holds up no other member, and returns the answers
// and errors in member order.
func each[T any](ctx context.Context, members []interlock.Locker, f func(context.Context, interlock.Locker) (T, error)) ([]T, []error) {
	out, errs := make([]T, len(members)), make([]error, len(members))
	var wg sync.WaitGroup
	for i, member := range members {
		wg.Go(func() { out[i], errs[i] = f(ctx, member) })
	}
	wg.Wait()
	return out, errs
}

// recorded reports whether member's Client records a hold of it by the
// calling owner (always true of a Locker that is not one of the kinds).
func recorded(ctx context.Context, member interlock.Locker) bool {
	c, ok := lockcore.MemberOf(member)
	return !ok || lockcore.Recorded(ctx, c)
}

// permanent reports whether err fails every attempt alike: bad input, a
// closed Client, a non-reentrant re-entry, a read-to-write upgrade.
func permanent(err error) bool {
	return errors.Is(err, interlock.ErrInvalid) || errors.Is(err, interlock.ErrClosed) ||
		errors.Is(err, nonreentrant.ErrReentered) || errors.Is(err, rwlock.ErrUpgrade)
}
