package redistest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// inboxTimeout bounds how long a marker may take to come back: it is
// there for a subscription that never works, and seconds above what a
// loaded machine's late replies take.
const inboxTimeout = 15 * time.Second

// Inbox records the messages of one channel, as a Java client's listener
// would see them.
type Inbox struct {
	rc      rueidis.Client
	channel string
	sharded bool
	mu      sync.Mutex
	msgs    []string
	lastErr error // why the subscription last ended, if it did
	marks   atomic.Int64
}

// Listen subscribes to channel (SSUBSCRIBE when sharded) on a connection
// of its own from rc, and returns once the subscription is live; it
// unsubscribes when tb ends. On a server without sharded pub/sub (Redis
// 6.x) it subscribes with SUBSCRIBE whatever sharded says, as the library
// then publishes with PUBLISH.
func Listen(tb testing.TB, rc rueidis.Client, channel string, sharded bool) *Inbox {
	tb.Helper()
	sharded = sharded && FeaturesOf(tb, rc).ShardedPubSub()
	in := &Inbox{rc: rc, channel: channel, sharded: sharded}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		// A subscription that ends (a dial that timed out on a loaded
		// machine, a connection that broke) subscribes again.
		for ctx.Err() == nil {
			err := in.listen(ctx)
			in.mu.Lock()
			in.lastErr = err
			in.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	tb.Cleanup(func() { cancel(); <-done })
	// Publish a marker until it comes back: the subscription is then live.
	mark := in.publishMark(tb)
	deadline := time.Now().Add(inboxTimeout)
	for !in.seen(mark) {
		if time.Now().After(deadline) {
			in.mu.Lock()
			err := in.lastErr
			in.mu.Unlock()
			tb.Fatalf("redistest: subscription to %s never became live within %v (the subscription last ended with: %v)",
				channel, inboxTimeout, err)
		}
		time.Sleep(20 * time.Millisecond)
		mark = in.publishMark(tb)
	}
	in.take(mark)
	return in
}

// listen subscribes on a dedicated connection, as a Java client's
// listener has one, and records its messages until the connection ends
// (its error) or ctx does (nil). A cluster client pins the connection to
// the node of the channel's slot for SSUBSCRIBE.
func (in *Inbox) listen(ctx context.Context) error {
	dc, release := in.rc.Dedicate()
	defer release()
	ended := dc.SetPubSubHooks(rueidis.PubSubHooks{OnMessage: func(m rueidis.PubSubMessage) {
		in.mu.Lock()
		in.msgs = append(in.msgs, m.Message)
		in.mu.Unlock()
	}})
	cmd := dc.B().Subscribe().Channel(in.channel).Build()
	if in.sharded {
		cmd = dc.B().Ssubscribe().Channel(in.channel).Build()
	}
	if err := dc.Do(ctx, cmd).Error(); err != nil {
		return err
	}
	select {
	case err := <-ended:
		if err == nil {
			err = errors.New("the connection closed")
		}
		return err
	case <-ctx.Done():
		return nil
	}
}

// publishFromSlot publishes ARGV[1] on KEYS[1] from the node that owns
// KEYS[1]'s slot.
const publishFromSlot = "return redis.call('PUBLISH', KEYS[1], ARGV[1])"

func (in *Inbox) publishMark(tb testing.TB) string {
	tb.Helper()
	mark := fmt.Sprintf("test-mark-%d", in.marks.Add(1))
	cmd := in.rc.B().Publish().Channel(in.channel).Message(mark).Build()
	switch {
	case in.sharded:
		cmd = in.rc.B().Spublish().Channel(in.channel).Message(mark).Build()
	case in.rc.Mode() == rueidis.ClientModeCluster:
		// Classic pub/sub on a cluster (Redis 6.x): published by a script
		// on the node of the channel's slot, as the library's scripts
		// publish, the marker takes their path through the cluster bus and
		// so arrives after their messages.
		cmd = in.rc.B().Eval().Script(publishFromSlot).Numkeys(1).Key(in.channel).Arg(mark).Build()
	}
	if err := in.rc.Do(context.Background(), cmd).Error(); err != nil {
		tb.Fatalf("redistest: publishing a marker on %s: %v", in.channel, err)
	}
	return mark
}

func (in *Inbox) seen(mark string) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return slices.Contains(in.msgs, mark)
}

// take returns the messages before mark, other marks left out, and drops
// them and mark.
func (in *Inbox) take(mark string) []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	i := slices.Index(in.msgs, mark)
	var out []string
	for _, m := range in.msgs[:max(i, 0)] {
		if !strings.HasPrefix(m, "test-mark-") {
			out = append(out, m)
		}
	}
	in.msgs = slices.Clone(in.msgs[i+1:])
	return out
}

// Next returns the messages published on the channel since the last call
// (or since Listen): a marker published now arrives after all of them.
func (in *Inbox) Next(tb testing.TB) []string {
	tb.Helper()
	mark := in.publishMark(tb)
	for deadline := time.Now().Add(inboxTimeout); !in.seen(mark); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: marker on %s never came back", in.channel)
		}
	}
	return in.take(mark)
}

// Glob escapes s for a KEYS pattern.
func Glob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// DeleteLike deletes, on the server or cluster at addrs, every key that
// contains name, for tests that clean up after themselves.
func DeleteLike(addrs []string, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: addrs})
	if err != nil {
		return
	}
	defer rc.Close()
	pattern := "*" + Glob(name) + "*"
	for _, n := range rc.Nodes() {
		ks, err := n.Do(ctx, n.B().Keys().Pattern(pattern).Build()).AsStrSlice()
		for _, k := range ks {
			if err == nil {
				n.Do(ctx, n.B().Del().Key(k).Build())
			}
		}
	}
}
