package redistest

import (
	"context"
	"fmt"
	"time"
)

// WithAOF makes every server started keep an append-only file, fsynced after
// every write (--appendonly yes --appendfsync always), in its directory.
// Restart and RestartAfter then bring back the data set the server had
// when it was killed, instead of an empty one. It is for durability tests;
// the default is no persistence at all.
func WithAOF() Option {
	return WithArgs("--appendonly", "yes", "--appendfsync", "always")
}

// RestartAfter kills the server with SIGKILL, as a crash would, leaves it
// down for d, and starts it again on the same port (see Restart), so that
// clients reconnect to the same address. It returns once the server answers,
// or with ctx.Err() if ctx ends first, in which case the server may be left
// down (Restart or Stop still work). A server that was not running is only
// started after d. Without WithAOF the restarted server is empty.
func (s *Server) RestartAfter(ctx context.Context, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("redistest: RestartAfter %s: negative downtime %v", s.addr, d)
	}
	if err := s.Kill(); err != nil {
		return err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	return s.Restart(ctx)
}
