package waitnote

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// syncBuffer is a bytes.Buffer the note's goroutine may write while the
// test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A wait that lasts says so once; stop joins the goroutine.
func TestNoteOnce(t *testing.T) {
	t.Parallel()
	var w syncBuffer
	calls := 0
	stop := Start(t.Context(), &w, 10*time.Millisecond, func(context.Context) string {
		calls++
		return "waiting for lock \"x\""
	})
	assert.Eventually(t, func() bool { return w.String() != "" }, 5*time.Second, time.Millisecond)
	stop()
	stop()
	assert.Equal(t, "interlock: waiting for lock \"x\"\n", w.String())
	assert.Equal(t, 1, calls)
}

// A wait that ends first says nothing, and neither does one whose say
// is still running when it ends.
func TestNoteStoppedFirst(t *testing.T) {
	t.Parallel()
	var w syncBuffer
	stop := Start(t.Context(), &w, time.Hour, func(context.Context) string { return "never" })
	stop()
	assert.Empty(t, w.String())

	entered := make(chan struct{})
	stop = Start(t.Context(), &w, 0, func(ctx context.Context) string {
		close(entered)
		<-ctx.Done() // a probe that answers only once the wait is over
		return "too late"
	})
	<-entered
	stop()
	assert.Empty(t, w.String())

	stop = Start(t.Context(), &w, 0, func(context.Context) string { return "" })
	time.Sleep(20 * time.Millisecond)
	stop()
	assert.Empty(t, w.String(), "an empty answer prints nothing")
}
