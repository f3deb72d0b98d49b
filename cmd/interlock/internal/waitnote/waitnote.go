// Package waitnote makes a long wait say what it waits for: once a
// command has waited a few seconds for a lock, permits or a latch, it
// prints one line on stderr naming what it waits for and how to look at
// it, instead of waiting in silence.
package waitnote

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"
)

// After is how long a wait goes on before it says what it waits for.
const After = 3 * time.Second

// Start prints, after d, "interlock: " and what say returns (nothing when
// it returns "") as one line on w, unless the returned stop was called
// first. say gets a context that stop (or ctx) cancels. stop ends it, may
// be called more than once, and returns only when nothing more can be
// printed and no goroutine of Start's is left.
func Start(ctx context.Context, w io.Writer, d time.Duration, say func(context.Context) string) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var (
		mu      sync.Mutex
		stopped bool
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		msg := say(ctx)
		mu.Lock()
		defer mu.Unlock()
		if !stopped && msg != "" && ctx.Err() == nil {
			fmt.Fprintln(w, "interlock: "+msg)
		}
	}()
	return sync.OnceFunc(func() {
		mu.Lock()
		stopped = true
		mu.Unlock()
		cancel()
		<-done
	})
}
