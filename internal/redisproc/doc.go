// Package redisproc launches and controls redis-server processes: on a free
// port of 127.0.0.1, in a temporary directory of their own, without
// persistence. It serves the test harness (internal/redistest) and
// "interlock demo", which starts a throwaway server when no Redis is at
// hand; it therefore does not import "testing".
//
// Every server listens on 127.0.0.1 only, keeps no data on disk (--save ""
// --appendonly no) and runs in its own temporary directory, which also
// holds its log file (redis.log). When a server fails to start, the
// returned error ends with the last lines of that log.
//
// On Linux every server is started with Pdeathsig set to SIGKILL, so that
// it dies with the process that started it even if that process is killed
// before any clean-up runs, and in its own process group, so that Ctrl-C in
// a terminal reaches only the parent. Stop waits for the process to exit and
// removes its directory; after Stop no goroutine of this package remains.
//
// The package talks to the servers it starts through a minimal RESP2
// client (Command, CommandString) rather than through rueidis: it dials
// once per check, has a hard deadline (a paused server must not hang a
// readiness poll) and leaves no goroutine behind.
package redisproc
