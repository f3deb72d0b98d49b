package redistest

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/interlock-go/interlock/internal/redisproc"
)

// pauseReplicationWithoutLaddr is PauseReplication on Redis 6.0 in a
// container, whose CLIENT LIST has no laddr field: the master cannot tell
// which of its replica links belongs to replica s. When the master has one replica link,
// it is s's: s is frozen, then the master closes that link, as on later
// versions. With more, s closes its own link just before it is frozen; it
// would reconnect only at its next replication cron (once a second), so a
// write the master accepts after PauseReplication returns cannot reach it.
func pauseReplicationWithoutLaddr(ctx context.Context, s *Server, master string) error {
	links, err := redisproc.CommandString(ctx, master, "CLIENT", "LIST", "TYPE", "replica")
	if err != nil {
		return fmt.Errorf("redistest: PauseReplication: master %s: %w", master, err)
	}
	if strings.Count(strings.TrimSpace(links), "\n") > 0 {
		if _, err := redisproc.Command(ctx, s.addr, "CLIENT", "KILL", "TYPE", "master"); err != nil {
			return fmt.Errorf("redistest: PauseReplication: replica %s closing its link: %w", s.addr, err)
		}
		return s.Pause()
	}
	if err := s.Pause(); err != nil {
		return err
	}
	if _, err := redisproc.Command(ctx, master, "CLIENT", "KILL", "TYPE", "replica"); err != nil {
		var re redisproc.ReplyError
		if !errors.As(err, &re) {
			return fmt.Errorf("redistest: PauseReplication: closing the link of replica %s on master %s: %w", s.addr, master, err)
		}
	}
	return nil
}
