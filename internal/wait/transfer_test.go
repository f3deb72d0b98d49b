package wait_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/wait"
)

// transferPrompt bounds what must happen promptly, on a loaded machine
// under -race.
const transferPrompt = 10 * time.Second

// transferLock is a lock with a fake wait.Transfer, logging the tries,
// stands and takes in the order they come.
type transferLock struct {
	retry  time.Duration
	freeAt int // the try that acquires; 0: none
	// onStand runs in Stand with its wake func; taken answers Taken,
	// told whether wake was called since the Stand.
	onStand func(wake func())
	taken   func(ctx context.Context, woken bool) (bool, error)

	mu    sync.Mutex
	log   []string
	tries int
	woken bool
	wakes chan func()
}

func newTransferLock(retry time.Duration) *transferLock {
	return &transferLock{retry: retry, wakes: make(chan func(), 64)}
}

func (l *transferLock) try(context.Context) (bool, time.Duration, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.log = append(l.log, "try")
	l.tries++
	return l.tries == l.freeAt, l.retry, nil
}

func (l *transferLock) Stand(wake func()) {
	l.mu.Lock()
	l.log = append(l.log, "stand")
	l.woken = false
	w := wake
	if wake != nil {
		w = func() {
			l.mu.Lock()
			l.woken = true
			l.mu.Unlock()
			wake()
		}
	}
	l.mu.Unlock()
	l.wakes <- w
	if l.onStand != nil {
		l.onStand(w)
	}
}

func (l *transferLock) HoldOff() time.Duration { return 0 }

func (l *transferLock) Taken(ctx context.Context) (bool, error) {
	l.mu.Lock()
	l.log = append(l.log, "taken")
	woken := l.woken
	l.mu.Unlock()
	if l.taken == nil {
		return false, nil
	}
	return l.taken(ctx, woken)
}

// events returns the log so far.
func (l *transferLock) events() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.log...)
}

// nextWake returns the wake func of the next Stand.
func (l *transferLock) nextWake(t *testing.T) func() {
	t.Helper()
	select {
	case w := <-l.wakes:
		require.NotNil(t, w, "Stand without a wake func")
		return w
	case <-time.After(transferPrompt):
		t.Fatal("the waiter never stood")
		return nil
	}
}

type result struct {
	ok  bool
	err error
}

// acquireAsync runs wait.Acquire with l as the Spec's Try and Transfer.
func acquireAsync(ctx context.Context, s wait.Spec, l *transferLock) <-chan result {
	s.Try, s.Transfer = l.try, l
	ch := make(chan result, 1)
	go func() {
		ok, err := wait.Acquire(ctx, s)
		ch <- result{ok, err}
	}()
	return ch
}

func recvResult(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(transferPrompt):
		t.Fatal("Acquire did not return")
		return result{}
	}
}

// Each wait stands first, with a wake func, and is followed by Taken
// before the next try.
func TestTransferStandsBeforeEachWait(t *testing.T) {
	h, _ := setup(t)
	l := newTransferLock(20 * time.Millisecond) // no message: the retry bound
	l.freeAt = 5
	r := recvResult(t, acquireAsync(t.Context(), wait.Spec{Hub: h, Channel: "wait:" + t.Name(), Forever: true}, l))
	require.NoError(t, r.err)
	assert.True(t, r.ok)
	assert.Equal(t, []string{"try", "try",
		"stand", "taken", "try",
		"stand", "taken", "try",
		"stand", "taken", "try"}, l.events())
	for range 3 {
		assert.NotNil(t, <-l.wakes)
	}
}

// Calling wake ends the wait at once, and a lock taken through the
// transfer is acquired without another try.
func TestTransferWakeEndsWait(t *testing.T) {
	h, _ := setup(t)
	l := newTransferLock(time.Minute)
	l.taken = func(_ context.Context, woken bool) (bool, error) { return woken, nil }
	done := acquireAsync(t.Context(), wait.Spec{Hub: h, Channel: "wait:" + t.Name(), Forever: true}, l)
	wake := l.nextWake(t)
	start := time.Now()
	wake()
	r := recvResult(t, done)
	require.NoError(t, r.err)
	assert.True(t, r.ok)
	assert.Less(t, time.Since(start), transferPrompt, "woken, not the retry bound of a minute")
	assert.Equal(t, []string{"try", "try", "stand", "taken"}, l.events(), "no try after the transfer")
	require.Eventually(t, func() bool { return h.Channels() == 0 }, transferPrompt, time.Millisecond)
}

// A claim between Stand and the park is not lost: the Wait after it
// returns at once.
func TestTransferWakeBeforeParkEndsWait(t *testing.T) {
	h, _ := setup(t)
	l := newTransferLock(-1) // wait for a message only
	l.onStand = func(wake func()) { wake() }
	l.taken = func(_ context.Context, woken bool) (bool, error) { return woken, nil }
	r := recvResult(t, acquireAsync(t.Context(), wait.Spec{Hub: h, Channel: "wait:" + t.Name(), Forever: true}, l))
	require.NoError(t, r.err)
	assert.True(t, r.ok)
	assert.Equal(t, []string{"try", "try", "stand", "taken"}, l.events())
}

// A transfer that passed nothing sends the waiter on to try.
func TestTransferNotTakenTries(t *testing.T) {
	h, _ := setup(t)
	l := newTransferLock(time.Minute)
	l.freeAt = 3
	l.taken = func(context.Context, bool) (bool, error) { return false, nil }
	done := acquireAsync(t.Context(), wait.Spec{Hub: h, Channel: "wait:" + t.Name(), Forever: true}, l)
	l.nextWake(t)()
	r := recvResult(t, done)
	require.NoError(t, r.err)
	assert.True(t, r.ok)
	assert.Equal(t, []string{"try", "try", "stand", "taken", "try"}, l.events())
}

// Taken's error ends the acquisition with it, without another try.
func TestTransferTakenError(t *testing.T) {
	h, _ := setup(t)
	errTaken := errors.New("taken failed")
	l := newTransferLock(time.Minute)
	l.taken = func(_ context.Context, woken bool) (bool, error) {
		if woken {
			return false, errTaken
		}
		return false, nil
	}
	done := acquireAsync(t.Context(), wait.Spec{Hub: h, Channel: "wait:" + t.Name(), Forever: true}, l)
	l.nextWake(t)()
	r := recvResult(t, done)
	assert.ErrorIs(t, r.err, errTaken)
	assert.False(t, r.ok)
	assert.Equal(t, []string{"try", "try", "stand", "taken"}, l.events())
}

// A wait that ctx or the deadline ends is still followed by Taken: no
// waiter leaves standing.
func TestTransferTakenAfterEveryWait(t *testing.T) {
	h, _ := setup(t)
	ch := "wait:" + t.Name()

	l := newTransferLock(time.Minute)
	var ended bool
	l.taken = func(ctx context.Context, _ bool) (bool, error) {
		ended = ctx.Err() != nil
		return false, nil
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	r := recvResult(t, acquireAsync(ctx, wait.Spec{Hub: h, Channel: ch, Forever: true}, l))
	assert.ErrorIs(t, r.err, context.DeadlineExceeded)
	assert.False(t, r.ok)
	assert.Equal(t, []string{"try", "try", "stand", "taken"}, l.events())
	assert.True(t, ended, "Taken gets the ended ctx")

	l = newTransferLock(-1)
	r = recvResult(t, acquireAsync(t.Context(), wait.Spec{Hub: h, Channel: ch, Deadline: time.Now().Add(150 * time.Millisecond)}, l))
	require.NoError(t, r.err)
	assert.False(t, r.ok)
	ev := l.events()
	stands := 0
	for i, e := range ev {
		if e == "stand" {
			stands++
			require.Less(t, i+1, len(ev), "left standing: %v", ev)
			assert.Equal(t, "taken", ev[i+1], "events %v", ev)
		}
	}
	assert.Positive(t, stands, "events %v", ev)
}
