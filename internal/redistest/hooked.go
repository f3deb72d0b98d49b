package redistest

import (
	"context"
	"strings"
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

// DoMulti sends cmds, counted, past the hook, but for a script that the
// Client sends behind the deletions it has queued (DELs, then one
// EVALSHA): that script goes through the hook as a Do would, after the
// DELs.
func (h *Hooked) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	h.mu.Lock()
	hook := h.hook
	h.mu.Unlock()
	n := len(cmds) - 1
	if hook == nil || !CarriesDeletes(cmds) {
		h.sent.Add(int64(len(cmds)))
		return h.Client.DoMulti(ctx, cmds...)
	}
	h.sent.Add(int64(n))
	res := h.Client.DoMulti(ctx, cmds[:n]...)
	return append(res, h.Do(ctx, cmds[n]))
}

// IsCommand reports whether cmd is the command name (any case).
func IsCommand(cmd rueidis.Completed, name string) bool {
	args := cmd.Commands()
	return len(args) > 0 && strings.EqualFold(args[0], name)
}

// CarriesDeletes reports whether cmds is a script that the Client sends
// with the deletions it has queued (DELs, then one EVALSHA), rather than a
// pipeline of its own, such as a renewal round.
func CarriesDeletes(cmds []rueidis.Completed) bool {
	n := len(cmds) - 1
	if n < 1 || !IsCommand(cmds[n], "EVALSHA") {
		return false
	}
	for _, c := range cmds[:n] {
		if !IsCommand(c, "DEL") {
			return false
		}
	}
	return true
}

// Aside returns dc, a connection a test's wrapper of a rueidis client
// dedicated, with its scripts and DELs sent through do, the wrapper's own
// DoMulti, instead: outside a cluster a Client sends its renewal rounds
// and latch sweeps on a dedicated connection, past the wrapper otherwise.
// Anything else (pub/sub) stays on dc. On a cluster they go on connections
// dedicated from the nodes' clients (Client.Nodes), which a wrapper sees
// only if it wraps those too (AsideNodes).
func Aside(dc rueidis.DedicatedClient, do func(context.Context, ...rueidis.Completed) []rueidis.RedisResult) rueidis.DedicatedClient {
	return &aside{DedicatedClient: dc, do: do}
}

type aside struct {
	rueidis.DedicatedClient
	do func(context.Context, ...rueidis.Completed) []rueidis.RedisResult
}

func (a *aside) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	for _, c := range cmds {
		if !IsCommand(c, "EVALSHA") && !IsCommand(c, "EVAL") && !IsCommand(c, "DEL") {
			return a.DedicatedClient.DoMulti(ctx, cmds...)
		}
	}
	return a.do(ctx, cmds...)
}

// AsideNodes returns nodes, the nodes of a test's wrapped client, each
// dedicating connections whose scripts and DELs go through do, the
// wrapper's own DoMulti (Aside): on a cluster a Client sends its renewal
// rounds and latch sweeps on connections dedicated from its masters.
func AsideNodes(nodes map[string]rueidis.Client, do func(context.Context, ...rueidis.Completed) []rueidis.RedisResult) map[string]rueidis.Client {
	for addr, n := range nodes {
		nodes[addr] = &asideNode{Client: n, do: do}
	}
	return nodes
}

type asideNode struct {
	rueidis.Client
	do func(context.Context, ...rueidis.Completed) []rueidis.RedisResult
}

func (n *asideNode) Dedicate() (rueidis.DedicatedClient, func()) {
	dc, release := n.Client.Dedicate()
	return Aside(dc, n.do), release
}

// Dedicate dedicates a connection whose renewal rounds and latch sweeps
// go through h (Aside).
func (h *Hooked) Dedicate() (rueidis.DedicatedClient, func()) {
	dc, release := h.Client.Dedicate()
	return Aside(dc, h.DoMulti), release
}

// Nodes returns the nodes of h's client, whose renewal rounds and latch
// sweeps go through h on a cluster (AsideNodes).
func (h *Hooked) Nodes() map[string]rueidis.Client { return AsideNodes(h.Client.Nodes(), h.DoMulti) }
