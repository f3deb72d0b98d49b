package exit

import (
	"bytes"
	"fmt"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/interlock-go/interlock"
)

func TestCode(t *testing.T) {
	t.Parallel()
	assert.Equal(t, 0, Code(nil))
	assert.Equal(t, Failure, Code(assert.AnError))
	assert.Equal(t, Busy, Code(Errorf(Busy, "busy")))
	quiet := &Error{Code: OK}
	assert.Equal(t, 0, Code(quiet))
	assert.Empty(t, message(quiet))
	assert.Empty(t, message(Status(3)))
	assert.Equal(t, 3, Code(Status(3)))
	assert.NoError(t, Status(0))
	assert.NoError(t, WithCode(Usage, nil))
	assert.Equal(t, SignalBase+2, Signal(syscall.SIGINT))
}

// Every command maps a failed call the same way: a refusal before
// anything changed is a usage error, anything else Redis failing.
func TestFailed(t *testing.T) {
	t.Parallel()
	assert.NoError(t, Failed("semaphore add", nil))
	err := Failed("semaphore add", fmt.Errorf("%w: WRONGTYPE", interlock.ErrInvalid))
	assert.Equal(t, Usage, Code(err))
	assert.ErrorIs(t, err, interlock.ErrInvalid)
	assert.Equal(t, "semaphore add: "+interlock.ErrInvalid.Error()+": WRONGTYPE", err.Error())
	err = Failed(`cannot take lock "x"`, assert.AnError)
	assert.Equal(t, Unavailable, Code(err))
	assert.Equal(t, `cannot take lock "x": `+assert.AnError.Error(), err.Error())
}

func TestReport(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	assert.Equal(t, Unavailable, Report(&b, Errorf(Unavailable, "down")))
	assert.Equal(t, "interlock: down\n", b.String())
	b.Reset()
	assert.Equal(t, 3, Report(&b, Status(3)))
	assert.Equal(t, OK, Report(&b, nil))
	assert.Empty(t, b.String())
}
