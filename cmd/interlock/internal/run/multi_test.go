package run

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/interlock-go/interlock"
)

// goneLocks names the members an unlock found gone, from a member's error
// or from the multi-lock's Error that wraps several members' errors.
func TestGoneLocksError(t *testing.T) {
	t.Parallel()
	gone := func(name string) error {
		return &interlock.Error{Kind: interlock.KindRLock, Op: interlock.OpRelease, Name: name, Err: interlock.ErrNotHeld}
	}
	several := func(errs ...error) error {
		return &interlock.Error{Kind: interlock.KindMultiLock, Op: interlock.OpRelease, Name: "A,B,C", Err: errors.Join(errs...)}
	}
	assert.Equal(t, `lock "B" was`, goneLocks(gone("B")))
	assert.Equal(t, `locks "A", "C" were`, goneLocks(several(gone("A"), gone("C"))))
	assert.Equal(t, `lock "C" was`, goneLocks(several(errors.New("timeout"), gone("C"))))
	assert.Equal(t, "a lock was", goneLocks(interlock.ErrNotHeld))
}
