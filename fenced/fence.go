package fenced

import (
	"fmt"
	"sync"
)

// Fence is the resource side of fencing for a resource that lives in one
// process (an in-memory store, a file this process alone writes, a
// connection to a system that cannot check tokens itself). It admits a
// token only if it is at least the highest token it has admitted so far,
// which it then records: once a holder with token t has been admitted, no
// holder with a token below t ever is again.
//
// Feed one Fence the tokens of one lock name only; tokens of different
// locks are not comparable. The zero value is ready to use and has
// admitted nothing. A Fence must not be copied after first use. Its
// methods are safe for concurrent use.
type Fence struct {
	mu      sync.Mutex
	highest uint64
}

// Admit reports whether token is admitted: whether it is at least the
// highest token admitted so far. An admitted token becomes the highest.
// Token 0 is never handed out and never admitted.
//
// Admit alone is a check, and a write made after it can still race a newer
// holder's Admit. Use it where the resource already serialises its
// writes and calls Admit inside that serialisation, or to shut older
// holders out as soon as a new holder has its token (before it even reads
// the resource). Otherwise use Do, which admits and writes in one step.
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

// Do runs write if token is admitted (see Admit) and returns its error.
// A token older than the highest admitted one is refused with an error
// wrapping ErrStale, and token 0 or a nil write with one wrapping
// interlock.ErrInvalid; write does not run then.
//
// The Fence is held while write runs, so no newer token can be admitted
// between the check and the write, and writes through one Fence never
// overlap. Keep write short, and do not call the Fence from it.
func (f *Fence) Do(token uint64, write func() error) error {
	switch {
	case token == 0:
		return invalid("token 0 is not a fencing token")
	case write == nil:
		return invalid("nil write")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.admit(token) {
		return fmt.Errorf("%w: token %d, but %d was admitted", ErrStale, token, f.highest)
	}
	return write()
}

// Highest returns the highest token admitted so far (0: none).
func (f *Fence) Highest() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.highest
}
