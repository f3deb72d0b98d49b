package semaphore

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/interlock-go/interlock"
)

// PermitID names one permit of an Expirable semaphore. On the wire and in
// Redis it is its 16 raw bytes, as Redisson stores it; people see it as 32
// lower-case hex characters.
type PermitID [16]byte

// String returns the id as 32 lower-case hex characters, Redisson's form.
func (id PermitID) String() string { return hex.EncodeToString(id[:]) }

// ParsePermitID parses 32 hex characters, in either case. A bad id is an
// *interlock.Error of KindExpirable and OpParse wrapping interlock.ErrInvalid.
func ParsePermitID(s string) (PermitID, error) {
	var id PermitID
	var err error
	if len(s) != 2*len(id) {
		err = fmt.Errorf("%w: permit id %q: want 32 hex characters, got %d", interlock.ErrInvalid, s, len(s))
	} else if _, bad := hex.Decode(id[:], []byte(s)); bad != nil {
		err = fmt.Errorf("%w: permit id %q is not hex", interlock.ErrInvalid, s)
	}
	if err != nil {
		return PermitID{}, &interlock.Error{Kind: interlock.KindExpirable, Op: interlock.OpParse, Err: err}
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
