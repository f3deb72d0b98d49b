package fenced

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/interlock-go/interlock"
)

// Fence is the resource side of fencing for a resource in one process (see
// "Fences" in the package documentation). The zero value has admitted
// nothing; a Fence must not be copied after first use. It is safe for
// concurrent use.
type Fence struct {
	mu      sync.Mutex
	highest uint64
}

// Admit reports whether token is at least the highest admitted so far, and
// then records it. Token 0 is never admitted. A write after Admit can race
// a newer holder; Do admits and writes in one step.
func (f *Fence) Admit(token uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.admit(token)
}

func (f *Fence) admit(token uint64) bool {
	if token == 0 || token < f.highest {
		return false
	}
	f.highest = token
	return true
}

// Do runs write, under the Fence, if token is admitted, and returns its
// error. An older token gets an error wrapping ErrStale, token 0 or a nil
// write one wrapping interlock.ErrInvalid; write does not run then.
func (f *Fence) Do(token uint64, write func() error) error {
	switch {
	case token == 0:
		return fenceErr("", invalid("token 0 is not a fencing token"))
	case write == nil:
		return fenceErr("", invalid("nil write"))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.admit(token) {
		return fenceErr("", stale(token, f.highest))
	}
	return write()
}

// stale is the error of a refused token.
func stale(token, highest uint64) error {
	return fmt.Errorf("%w: token %d, but %d was admitted", ErrStale, token, highest)
}

// fenceErr is the *interlock.Error of a fence's operation on key (empty
// for a Fence); context errors stay as they are.
func fenceErr(key string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &interlock.Error{Kind: interlock.KindFenced, Op: interlock.OpFence, Name: key, Err: err}
}

// Highest returns the highest token admitted so far (0: none).
func (f *Fence) Highest() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.highest
}
