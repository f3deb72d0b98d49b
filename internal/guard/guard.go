// Package guard lets the guards of one hold share a single context when
// the context they are asked for can never end by itself.
//
// A guard is a context that ends with a hold. Derived from a parent that
// can end, it is registered with the hold until the first of the two ends.
// Derived from a parent that never ends (context.Background, or a value or
// WithoutCancel context over one), such a registration would last as long
// as the hold, once per call. Instead the hold keeps one shared context per
// base, and each call returns a View of it that carries the caller's
// values: repeated calls cost nothing that outlives them.
package guard

import (
	"context"
	"fmt"
)

// view is a shared guard seen through the context a caller gave: its end,
// deadline and cause are the shared context's, its values the caller's.
type view struct {
	context.Context // the shared guard
	values          context.Context
}

// Value returns the caller's value for key. The shared guard derives from
// context.Background alone, so the only keys it knows are the context
// package's own (how context.Cause and derived contexts find its
// cancellation); it answers those first.
func (v *view) Value(key any) any {
	if x := v.Context.Value(key); x != nil {
		return x
	}
	return v.values.Value(key)
}

func (v *view) String() string { return fmt.Sprintf("%v.Guard", v.values) }

// View returns shared with the values of values.
func View(values, shared context.Context) context.Context {
	return &view{Context: shared, values: values}
}

// Base reports whether a guard of parent may be shared, and on what: nil
// when parent never ends, the shared guard parent views when it is a View
// (a guard of a guard, as a multi-lock nests them). Any other parent ends
// by itself, and a guard of it is registered until it does.
func Base(parent context.Context) (base context.Context, shared bool) {
	if v, ok := parent.(*view); ok {
		return v.Context, true
	}
	return nil, parent.Done() == nil
}
