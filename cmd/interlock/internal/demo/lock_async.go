package demo

import "context"

// asyncLock is a Lock call running in a goroutine of its own, so that a
// scene can go on telling what happens while a worker waits.
type asyncLock struct {
	done     chan error
	cancel   context.CancelFunc
	received bool
}

// lockAsync starts lock(ctx), a lock's Lock method or a wrapper of one, in
// a goroutine. The caller receives the result from C, and must call stop
// before it returns. Whatever lock stores before it returns may be read
// once its result has been received.
func lockAsync(ctx context.Context, lock func(context.Context) error) *asyncLock {
	ctx, cancel := context.WithCancel(ctx)
	a := &asyncLock{done: make(chan error, 1), cancel: cancel}
	go func() { a.done <- lock(ctx) }()
	return a
}

// C yields the result of Lock once; the receiver must call got.
func (a *asyncLock) C() <-chan error { return a.done }

// got records that the result was received from C.
func (a *asyncLock) got() { a.received = true }

// wait waits for the result of Lock, or for ctx to end, and returns the
// result or ctx's error.
func (a *asyncLock) wait(ctx context.Context) error {
	select {
	case err := <-a.C():
		a.got()
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stop abandons a Lock still waiting and waits for its goroutine to end.
func (a *asyncLock) stop() {
	a.cancel()
	if !a.received {
		<-a.done
		a.received = true
	}
}
