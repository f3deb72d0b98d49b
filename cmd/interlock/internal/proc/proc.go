// Package proc holds what interlock needs of processes and signals: the
// signals a command catches, the process groups of the processes it
// starts (run's CMD, the demo's holders), and signalling them.
package proc

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Interruptible returns a context cancelled by the first SIGINT or
// SIGTERM, and a function that stops listening and reports the signal, if
// any. The goroutine that listens ends when the context does.
func Interruptible(parent context.Context) (context.Context, func() os.Signal) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	ctx, stop := CancelOnSignal(parent, sigs)
	return ctx, func() os.Signal {
		signal.Stop(sigs)
		return stop()
	}
}

// CancelOnSignal returns a context cancelled by the first signal from sigs,
// and a stop function, safe to call again, that cancels it, waits until
// sigs is no longer read, and returns that signal, if any.
func CancelOnSignal(parent context.Context, sigs <-chan os.Signal) (context.Context, func() os.Signal) {
	ctx, cancel := context.WithCancel(parent)
	var got os.Signal
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case got = <-sigs:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() os.Signal {
		cancel()
		<-done
		return got
	}
}
