package proc

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCancelOnSignal(t *testing.T) {
	t.Parallel()
	sigs := make(chan os.Signal, 1)
	ctx, stop := CancelOnSignal(t.Context(), sigs)
	sigs <- os.Interrupt
	<-ctx.Done()
	assert.Equal(t, os.Interrupt, stop())
	assert.Equal(t, os.Interrupt, stop(), "stop may be called again")

	ctx, stop = CancelOnSignal(t.Context(), sigs)
	assert.Nil(t, stop(), "no signal")
	assert.ErrorIs(t, ctx.Err(), context.Canceled, "stop cancels the context")
}
