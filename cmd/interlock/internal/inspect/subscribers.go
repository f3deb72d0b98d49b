package inspect

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/cmd/interlock/internal/kinds"
	"github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"
	"github.com/interlock-go/interlock/internal/keys"
)

// Subscribers counts the connections subscribed to each channel of one
// name, classic and sharded, over every node: the clients waiting for it.
type Subscribers struct {
	// Lock is the lock channel's (reentrant, fair, fenced and spin locks).
	Lock int64
	// ReadWrite is the read/write lock channel's.
	ReadWrite int64
	// Semaphore is the semaphore channel's (both kinds).
	Semaphore int64
	// Latch is the count-down latch channel's.
	Latch int64
}

// Total returns the subscribers of every channel.
func (s Subscribers) Total() int64 { return s.Lock + s.ReadWrite + s.Semaphore + s.Latch }

// Hint returns what the subscribers say an object the facts f do not
// show is: a semaphore, or a latch, waited for although its key does not
// exist (or holds an integer that either could be); "" when they do not
// tell, or Redis does.
func (s Subscribers) Hint(f *Facts) string {
	switch k := DetectKind(f); {
	case k != kinds.None && k != kinds.Unknown, f.PermitsType == "zset":
	case s.Semaphore > 0 && s.Latch == 0:
		return kinds.Semaphore
	case s.Latch > 0 && s.Semaphore == 0:
		return kinds.Latch
	}
	return ""
}

// CountSubscribers reads, with PUBSUB NUMSUB and SHARDNUMSUB on every
// node (classic subscribers may be connected to any), how many
// connections are subscribed to name's channels. A server without sharded
// pub/sub (before Redis 7) counts the classic ones only.
func CountSubscribers(ctx context.Context, rc rueidis.Client, name string) (Subscribers, error) {
	chans := []string{
		keys.LockChannel(name), keys.Prefix(keys.ReadWriteChannelPrefix, name),
		keys.SemaphoreChannel(name), keys.LatchChannel(name),
	}
	counts := map[string]int64{}
	nodes := rc.Nodes()
	for _, addr := range slices.Sorted(maps.Keys(nodes)) {
		n := nodes[addr]
		b := n.B()
		cmds := rueidis.Commands{b.PubsubNumsub().Channel(chans...).Build()}
		for _, ch := range chans {
			cmds = append(cmds, b.PubsubShardnumsub().Channel(ch).Build())
		}
		for i, r := range n.DoMulti(ctx, cmds...) {
			m, err := r.AsIntMap()
			switch {
			case err == nil:
			case i > 0 && redisconn.IsErrorReply(err):
				continue // no sharded pub/sub
			default:
				return Subscribers{}, fmt.Errorf("PUBSUB on %s: %w", addr, err)
			}
			for ch, k := range m {
				counts[ch] += k
			}
		}
	}
	return Subscribers{
		Lock: counts[chans[0]], ReadWrite: counts[chans[1]], Semaphore: counts[chans[2]], Latch: counts[chans[3]],
	}, nil
}
