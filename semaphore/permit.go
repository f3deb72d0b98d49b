package semaphore

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// PermitID names one permit of an Expirable semaphore. On the wire and in
// Redis it is its 16 raw bytes, as Redisson stores it; people see it as 32
// lower-case hex characters.
type PermitID [16]byte

// String returns the id as 32 lower-case hex characters, Redisson's form.
func (id PermitID) String() string { return hex.EncodeToString(id[:]) }

// ParsePermitID parses 32 hex characters, in either case.
func ParsePermitID(s string) (PermitID, error) {
	var id PermitID
	if len(s) != 2*len(id) {
		return id, fmt.Errorf("%w: semaphore: permit id %q: want 32 hex characters, got %d", ErrInvalid, s, len(s))
	}
	if _, err := hex.Decode(id[:], []byte(s)); err != nil {
		return id, fmt.Errorf("%w: semaphore: permit id %q is not hex", ErrInvalid, s)
	}
	return id, nil
}

// newPermitIDs returns n fresh random ids.
func newPermitIDs(n int) []PermitID {
	ids := make([]PermitID, n)
	for i := range ids {
		_, _ = rand.Read(ids[i][:]) // crypto/rand.Read never fails on supported platforms
	}
	return ids
}

// raw returns the id as the string of its bytes, its form in scripts.
func (id PermitID) raw() string { return string(id[:]) }
