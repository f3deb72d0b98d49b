package runtime

import (
	"context"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/keys"
)

// deleter deletes keys in the background. The first key queued after a
// quiet spell starts a short batching window; when it closes, every key
// queued meanwhile goes in one DEL per hash slot, all in one pipeline.
// Under load that turns one round trip per unlock into one per window.
// One goroutine per Client.
type deleter struct {
	rc rueidis.Client

	mu      sync.Mutex
	pending []string
	wake    chan struct{}

	cancel  context.CancelFunc
	done    chan struct{}
	closeBy time.Time // set by close: the deadline of the last flush
}

const (
	// deleteWindow is how long a queued key may wait for company.
	deleteWindow = 2 * time.Millisecond
	// deleteTimeout bounds one batch.
	deleteTimeout = time.Second
	// maxDelKeys bounds the keys of one DEL command.
	maxDelKeys = 512
)

func newDeleter(rc rueidis.Client) *deleter {
	ctx, cancel := context.WithCancel(context.Background())
	d := &deleter{rc: rc, wake: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	go d.run(ctx)
	return d
}

func (d *deleter) add(key string) {
	d.mu.Lock()
	d.pending = append(d.pending, key)
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// close stops the goroutine after one last flush, bounded by deadline.
func (d *deleter) close(deadline time.Time) {
	d.closeBy = deadline
	d.cancel()
	<-d.done
}

func (d *deleter) run(ctx context.Context) {
	defer close(d.done)
	window := time.NewTimer(deleteWindow)
	window.Stop()
	defer window.Stop()
	var open <-chan time.Time // nil while no window is open
	for {
		select {
		case <-d.wake:
			if open == nil {
				window.Reset(deleteWindow)
				open = window.C
			}
		case <-open:
			open = nil
			d.flush(time.Now().Add(deleteTimeout))
		case <-ctx.Done():
			d.flush(d.closeBy)
			return
		}
	}
}

// flush deletes every queued key by deadline. Its context is its own, so
// that close neither abandons a batch in flight nor the keys queued before
// it.
func (d *deleter) flush(deadline time.Time) {
	d.mu.Lock()
	batch := d.pending
	d.pending = nil
	d.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	// The keys of one DEL share a slot, whatever the client's mode: a
	// cluster, and a server that enforces slots behind one address (a
	// managed service, a proxy), refuse a DEL whose keys span slots. The
	// DELs of one flush go in one pipeline.
	groups := map[uint16][]string{}
	for _, k := range batch {
		s := keys.Slot(k)
		groups[s] = append(groups[s], k)
	}
	var cmds rueidis.Commands
	for _, g := range groups {
		for len(g) > 0 {
			n := min(len(g), maxDelKeys)
			cmds = append(cmds, d.rc.B().Del().Key(g[:n]...).Build())
			g = g[n:]
		}
	}
	// Failures are left to the keys' own TTL: a latch expires by itself.
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	d.rc.DoMulti(ctx, cmds...)
}
