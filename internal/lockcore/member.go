package lockcore

import (
	"context"
	"time"

	"github.com/interlock-go/interlock/internal/renewal"
	"github.com/interlock-go/interlock/internal/report"
)

// Embed is how a lock kind holds its Common: embedded through an
// unexported alias (type engine = lockcore.Embed, which internal/gen/locker
// writes), it adds no exported field or method to the kind, and MemberOf
// still finds the Common behind any kind.
type Embed struct{ c Common }

// Embedded returns the Embed of c.
func Embedded(c Common) Embed { return Embed{c} }

// Of returns the Common that e holds.
func Of(e *Embed) *Common { return &e.c }

// member is what every kind's lock is, through the Embed it embeds.
type member interface{ common() *Common }

func (e *Embed) common() *Common { return &e.c }

// MemberOf returns the engine lock behind m when m is one of interlock's
// lock kinds, for what a multi-lock needs beyond interlock.Locker.
func MemberOf(m any) (*Common, bool) {
	if c, ok := m.(member); ok {
		return c.common(), true
	}
	return nil, false
}

// SameLock reports whether a and b are one lock to the server: the same
// key through the same Client, whatever their kinds.
func SameLock(a, b *Common) bool { return a.rt == b.rt && a.name == b.name }

// SameClient reports whether a and b run through the same Client.
func SameClient(a, b *Common) bool { return a.rt == b.rt }

// Relet sets the calling owner's innermost hold of l to end lease from
// now, on the server (the key's TTL, as Redisson's PEXPIRE does) and in the
// Client's records, and reports whether the owner still held it. This is
// how a multi-lock gives all its members one lease once it has them.
func Relet(ctx context.Context, l *Common, lease time.Duration) (bool, error) {
	_, holder, err := l.owner(ctx, report.OpAcquire)
	if err != nil {
		return false, err
	}
	if l.holds(holder) == 0 {
		return false, nil
	}
	task := l.kind.Renew
	k, a := task.Args(lease, []*renewal.Entry{{Key: l.name, Owner: holder}})
	sent := time.Now()
	renewed, err := task.Script.Exec(ctx, l.rt.RC, k, a).AsIntSlice()
	if err != nil {
		return false, l.OpErr(report.OpAcquire, err)
	}
	if len(renewed) != 1 || renewed[0] != 1 {
		l.rt.Renewal.Lose(l.name, holder) // gone on the server
		return false, nil
	}
	return l.rt.Renewal.ReletLast(l.name, holder, lease, sent), nil
}

// Recorded reports whether this Client records a hold of l by the calling
// owner; it sends nothing.
func Recorded(ctx context.Context, l *Common) bool {
	_, holder, err := l.owner(ctx, report.OpInspect)
	return err == nil && l.holds(holder) > 0
}

// MemberGuard is l's Guard for a multi-lock: when the hold is lost, its
// cause is the *interlock.Error of l's kind and name, with Op lost, around
// the cause Guard gives, so that the multi-lock's guard says which member
// was lost.
func MemberGuard(ctx context.Context, l *Common) context.Context {
	if l.err == nil {
		if owner, err := l.rt.Owner(ctx); err == nil {
			as := renewal.Label{Kind: l.kindName, Name: l.given}
			if g, ok := l.rt.Renewal.GuardNamed(ctx, l.name, owner+l.kind.Suffix, as); ok {
				return g
			}
		}
	}
	return l.Guard(ctx) // its error names l already
}
