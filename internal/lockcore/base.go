package lockcore

import (
	"context"
	"errors"
	"fmt"

	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/pubsub"
	"github.com/interlock-go/interlock/internal/renewal"
	"github.com/interlock-go/interlock/internal/report"
	"github.com/interlock-go/interlock/internal/runtime"
)

// base is what every synchronizer shares, lock or not: its Client's
// runtime, its names, the argument error every method returns, and how
// its errors and events read. Common and Object embed it, so that they
// check, refuse and report alike.
type base struct {
	rt       *runtime.Runtime // nil for a nil client
	kindName string           // in errors and events (interlock.KindRLock)
	name     string           // the mapped name: the key, and what the other keys derive from
	given    string           // the name the caller gave, for Name and errors
	channel  string
	err      error           // the argument error every method returns
	obs      report.Observer // nil: no events are built
	label    *renewal.Label  // names the holds' losses, with an Observer only
	shapes   []keyShape      // its keys and what they keep, for Probe
}

// newBase returns the synchronizer called name of kind on client (an
// *interlock.Client), whose keys derive from name as the Client's
// NameMapper maps it. A bad (mapped) name or a nil client becomes the
// argument error.
func newBase(client any, kind, name string) base {
	rt := runtime.Of(client)
	b := base{rt: rt, kindName: kind, name: name, given: name}
	if rt != nil {
		if rt.Cfg.Names != nil {
			b.name = rt.Cfg.Names.Map(name)
		}
		if rt.Cfg.Observer != nil {
			b.obs = rt.Cfg.Observer
			b.label = &renewal.Label{Kind: kind, Name: name}
		}
	}
	switch err := keys.Check(b.name); {
	case rt == nil:
		b.err = Invalid("nil client")
	case err != nil && b.name != name:
		b.err = Invalid("name %q is mapped to an invalid name: %w", name, err)
	case err != nil:
		b.err = Invalid("%w", err)
	}
	return b
}

// Name returns the name as given; its Redis key is that name as the
// Client's NameMapper maps it (interlock.WithNameMapper).
func (b *base) Name() string { return b.given }

// Refuse makes every method fail with err, an argument error found after
// construction (made by Invalid), unless there is one already.
func (b *base) Refuse(err error) {
	if b.err == nil {
		b.err = err
	}
}

// Ready returns the argument error as the error of operation op, or
// interlock.ErrClosed once the Client is closed.
func (b *base) Ready(op report.Op) error {
	if b.err != nil {
		return b.OpErr(op, b.err)
	}
	if b.rt.Closed() {
		return report.ErrClosed
	}
	return nil
}

// Refused returns the argument error as the error of operation op, nil
// when there is none, for the methods that send nothing (Guard,
// Remaining): they do not refuse a closed Client.
func (b *base) Refused(op report.Op) error {
	if b.err != nil {
		return b.OpErr(op, b.err)
	}
	return nil
}

// Invalid returns the *interlock.Error of operation op about a bad
// argument.
func (b *base) Invalid(op report.Op, format string, args ...any) error {
	return b.OpErr(op, Invalid(format, args...))
}

// OpErr wraps err from operation op in an *interlock.Error, once; nil,
// context errors and a closed Client are returned as themselves, and a
// key of another type is reported as a bad argument (Fail says which key
// holds what).
func (b *base) OpErr(op report.Op, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, pubsub.ErrClosed) || errors.Is(err, report.ErrClosed):
		return report.ErrClosed
	}
	if !errors.Is(err, report.ErrInvalid) && wrongData(err) {
		err = fmt.Errorf("%w: a key of %s holds another type of data (%w)", report.ErrInvalid, b.given, err)
	}
	return report.Wrap(b.kindName, op, b.given, err)
}

// observe tells the Observer, which must be set, about e.
func (b *base) observe(ctx context.Context, e report.Event) {
	e.Kind, e.Name = b.kindName, b.given
	b.obs.Observe(ctx, e)
}

// Invalid returns an error about a bad argument, wrapping
// interlock.ErrInvalid, for an option to hold until the synchronizer's
// methods return it as an *interlock.Error.
func Invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{report.ErrInvalid}, args...)...)
}
