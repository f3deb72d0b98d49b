package redistest

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/redis/rueidis"
)

// Hook runs in place of a Do of a Hooked client: next sends cmd on the
// client under it and returns its reply, which the hook may keep, change
// or lose.
type Hook func(ctx context.Context, cmd rueidis.Completed, next func() rueidis.RedisResult) rueidis.RedisResult

// Hooked wraps a rueidis client for the tests that watch or tamper with
// what the library sends: it counts the commands sent through it (Do and
// DoMulti), and a hook, once set, runs each Do.
type Hooked struct {
	rueidis.Client
	sent atomic.Int64
	mu   sync.Mutex
	hook Hook
}

// Set replaces the hook; nil sends every command unchanged.
func (h *Hooked) Set(hook Hook) {
	h.mu.Lock()
	h.hook = hook
	h.mu.Unlock()
}

// Sent returns how many commands were sent through h.
func (h *Hooked) Sent() int64 { return h.sent.Load() }

// Do sends cmd through the hook, if one is set.
func (h *Hooked) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	h.sent.Add(1)
	next := func() rueidis.RedisResult { return h.Client.Do(ctx, cmd) }
	h.mu.Lock()
	hook := h.hook
	h.mu.Unlock()
	if hook == nil {
		return next()
	}
	return hook(ctx, cmd, next)
}

// DoMulti sends cmds, counted, past the hook.
func (h *Hooked) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	h.sent.Add(int64(len(cmds)))
	return h.Client.DoMulti(ctx, cmds...)
}
