package election_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/election"
	"github.com/interlock-go/interlock/fenced"
	"github.com/interlock-go/interlock/internal/redistest"
)

// A campaign leads with the next token of the fenced lock, Leader reads
// its value and token, and Resign hands leadership to the next candidate,
// deleting the value key.
func TestCampaignLeaderResign(t *testing.T) {
	c, rc := newClient(t)
	ctx := redistest.Context(t)
	name := electionName(t)
	a, b := election.New(c, name), election.New(c, name)

	_, err := a.Leader(ctx)
	require.ErrorIs(t, err, election.ErrNoLeader)

	la, err := a.Campaign(ctx, "node-a")
	require.NoError(t, err)
	assert.Equal(t, uint64(1), la.Token())
	assert.Equal(t, "node-a", la.Value())
	require.NoError(t, la.Context().Err())
	assert.Same(t, la, a.Leading())

	ld, err := b.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, "node-a", ld.Value)
	assert.Equal(t, uint64(1), ld.Token)
	assert.Contains(t, ld.Owner, c.ID()+":")

	ttl, err := rc.Do(ctx, rc.B().Pttl().Key("interlock_leader:{"+name+"}").Build()).AsInt64()
	require.NoError(t, err)
	assert.Positive(t, ttl, "the value key expires with the lock")

	got := make(chan *election.Leadership, 1)
	go func() {
		lb, err := b.Campaign(ctx, "node-b")
		assert.NoError(t, err)
		got <- lb
	}()
	select {
	case <-got:
		t.Fatal("b leads while a does")
	case <-time.After(200 * time.Millisecond):
	}
	require.NoError(t, a.Resign(ctx))
	assert.ErrorIs(t, context.Cause(la.Context()), context.Canceled)
	assert.Nil(t, a.Leading())
	var lb *election.Leadership
	select {
	case lb = <-got:
	case <-time.After(redistest.Prompt):
		t.Fatal("b never led")
	}
	assert.Equal(t, uint64(2), lb.Token())
	ld, err = a.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, election.Leader{Value: "node-b", Token: 2, Owner: ld.Owner}, ld)

	require.NoError(t, b.Resign(ctx))
	n, err := rc.Do(ctx, rc.B().Exists().Key("interlock_leader:{"+name+"}").Build()).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, n, "resigning deleted the value key")
	err = b.Resign(ctx)
	assert.ErrorIs(t, err, interlock.ErrNotHeld)
}

// A second Campaign of one Election is refused while it leads; bad input
// is refused before anything is sent.
func TestCampaignRefusals(t *testing.T) {
	c, _ := newClient(t)
	ctx := redistest.Context(t)
	e := election.New(c, electionName(t))
	_, err := e.Campaign(ctx, "x")
	require.NoError(t, err)
	_, err = e.Campaign(ctx, "y")
	assert.ErrorIs(t, err, interlock.ErrInvalid)
	require.NoError(t, e.Resign(ctx))

	for _, bad := range []*election.Election{
		election.New(c, ""),
		election.New(nil, "x"),
		election.New(c, "x", election.WithRecheck(0)),
	} {
		_, err := bad.Campaign(ctx, "v")
		assert.ErrorIs(t, err, interlock.ErrInvalid)
		_, err = bad.Leader(ctx)
		assert.ErrorIs(t, err, interlock.ErrInvalid)
		assert.ErrorIs(t, bad.Resign(ctx), interlock.ErrInvalid)
		_, open := <-bad.Observe(ctx)
		assert.False(t, open)
	}
}

// A campaign whose ctx ends returns ctx's error and leads nothing.
func TestCampaignCancelled(t *testing.T) {
	c, _ := newClient(t)
	ctx := redistest.Context(t)
	name := electionName(t)
	a, b := election.New(c, name), election.New(c, name)
	_, err := a.Campaign(ctx, "a")
	require.NoError(t, err)
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = b.Campaign(short, "b")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Nil(t, b.Leading())
	require.NoError(t, a.Resign(ctx))
}

// Leadership ends with ErrLockLost when the lock is taken away; the value
// key of the lost term no longer names the leader.
func TestLeadershipLost(t *testing.T) {
	c, _ := newClient(t, interlock.WithWatchdogTimeout(time.Second))
	ctx := redistest.Context(t)
	name := electionName(t)
	e := election.New(c, name)
	lead, err := e.Campaign(ctx, "doomed")
	require.NoError(t, err)

	other, _ := newClient(t)
	m := fenced.New(other, name)
	ok, err := m.ForceUnlock(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	mctx := interlock.WithOwner(ctx, 7)
	token, err := m.LockToken(mctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(2), token)

	select {
	case <-lead.Context().Done():
	case <-time.After(redistest.Prompt):
		t.Fatal("the lost term's context never ended")
	}
	assert.ErrorIs(t, context.Cause(lead.Context()), interlock.ErrLockLost)
	assert.Nil(t, e.Leading())

	ld, err := e.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, election.Leader{Value: "", Token: 2, Owner: other.ID() + ":7"}, ld,
		"a holder with no value key leads with an empty value; the stale key is not its")
	require.NoError(t, m.Unlock(mctx))

	// The Election campaigns again after its loss.
	lead, err = e.Campaign(ctx, "again")
	require.NoError(t, err)
	assert.Equal(t, uint64(3), lead.Token())
	require.NoError(t, e.Resign(ctx))
}

// The watchdog keeps the lock and the value key alive together past the
// watchdog timeout.
func TestValueKeyRenewed(t *testing.T) {
	c, rc := newClient(t, interlock.WithWatchdogTimeout(300*time.Millisecond))
	ctx := redistest.Context(t)
	name := electionName(t)
	e := election.New(c, name)
	_, err := e.Campaign(ctx, "kept")
	require.NoError(t, err)
	time.Sleep(time.Second)
	ld, err := e.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, "kept", ld.Value)
	ttl, err := rc.Do(ctx, rc.B().Pttl().Key("interlock_leader:{"+name+"}").Build()).AsInt64()
	require.NoError(t, err)
	assert.Positive(t, ttl)
	require.NoError(t, e.Resign(ctx))
}

// N candidates on several Clients: at most one leads at any moment, and
// every one leads once.
func TestContenders(t *testing.T) {
	ctx := redistest.Context(t)
	name := electionName(t)
	const n = 6
	var leading, maxLeading atomic.Int32
	var wg sync.WaitGroup
	tokens := make(chan uint64, n)
	for i := range n {
		c, _ := newClient(t)
		e := election.New(c, name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			lead, err := e.Campaign(ctx, string(rune('a'+i)))
			if !assert.NoError(t, err) {
				return
			}
			now := leading.Add(1)
			for {
				m := maxLeading.Load()
				if now <= m || maxLeading.CompareAndSwap(m, now) {
					break
				}
			}
			time.Sleep(20 * time.Millisecond)
			leading.Add(-1)
			tokens <- lead.Token()
			assert.NoError(t, e.Resign(ctx))
		}()
	}
	wg.Wait()
	close(tokens)
	assert.Equal(t, int32(1), maxLeading.Load())
	seen := map[uint64]bool{}
	for tok := range tokens {
		assert.False(t, seen[tok])
		seen[tok] = true
	}
	assert.Len(t, seen, n)
}

// next returns the next leader seen, failing t when none comes promptly.
func next(t *testing.T, seen <-chan election.Leader) election.Leader {
	t.Helper()
	select {
	case ld, ok := <-seen:
		require.True(t, ok, "Observe closed")
		return ld
	case <-time.After(redistest.Prompt):
		t.Fatal("Observe saw no change")
	}
	return election.Leader{}
}

// Observe sends the current leader, then every new term: a Go leader's
// announcement, a silent acquisition after a release (as a Java one is),
// and with a recheck interval of a minute, so that no poll explains them.
func TestObserve(t *testing.T) {
	c, _ := newClient(t, interlock.WithWatchdogTimeout(time.Second))
	ctx := redistest.Context(t)
	name := electionName(t)
	a := election.New(c, name)
	la, err := a.Campaign(ctx, "a")
	require.NoError(t, err)

	watcher := election.New(c, name, election.WithRecheck(time.Minute))
	octx, stop := context.WithCancel(ctx)
	seen := watcher.Observe(octx)
	ld := next(t, seen)
	assert.Equal(t, election.Leader{Value: "a", Token: la.Token(), Owner: ld.Owner}, ld, "the current leader first")

	require.NoError(t, a.Resign(ctx))
	other, _ := newClient(t)
	m := fenced.New(other, name)
	mctx := interlock.WithOwner(ctx, 9)
	_, err = m.LockToken(mctx) // a silent acquisition, as a Java holder's
	require.NoError(t, err)
	ld = next(t, seen)
	assert.Equal(t, election.Leader{Value: "", Token: la.Token() + 1, Owner: other.ID() + ":9"}, ld)
	require.NoError(t, m.Unlock(mctx))

	b := election.New(c, name)
	lb, err := b.Campaign(ctx, "b")
	require.NoError(t, err)
	ld = next(t, seen)
	assert.Equal(t, "b", ld.Value)
	assert.Equal(t, lb.Token(), ld.Token)

	stop()
	for range seen {
	}
	require.NoError(t, b.Resign(ctx))
}

// Observe sees a leader whose lock expired (a crashed leader) replaced by
// a silent acquisition, without a message: from the lock's PTTL.
func TestObserveExpiry(t *testing.T) {
	ctx := redistest.Context(t)
	name := electionName(t)
	c, _ := newClient(t)
	watcher := election.New(c, name, election.WithRecheck(time.Minute))
	seen := watcher.Observe(ctx)

	dead, _ := newClient(t)
	m := fenced.New(dead, name)
	_, err := m.LockLeaseToken(interlock.WithOwner(ctx, 1), 300*time.Millisecond) // a holder that dies
	require.NoError(t, err)
	assert.Equal(t, uint64(1), next(t, seen).Token)

	heir := election.New(dead, name)
	lead, err := heir.Campaign(ctx, "heir") // waits for the expiry
	require.NoError(t, err)
	ld := next(t, seen)
	assert.Equal(t, uint64(2), ld.Token)
	assert.Equal(t, "heir", ld.Value)
	require.NoError(t, heir.Resign(ctx))
	_ = lead
}

// An observer takes no wake-up from a candidate of its own Client: with
// the default 30s watchdog, the release wakes the waiting campaign at once.
func TestObserverTakesNoWakeUp(t *testing.T) {
	ctx := redistest.Context(t)
	name := electionName(t)
	c, _ := newClient(t)
	holder, _ := newClient(t)
	a := election.New(holder, name)
	_, err := a.Campaign(ctx, "a")
	require.NoError(t, err)

	var observers []<-chan election.Leader
	for range 3 {
		observers = append(observers, election.New(c, name).Observe(ctx))
	}
	for _, o := range observers {
		next(t, o)
	}
	b := election.New(c, name)
	led := make(chan error, 1)
	go func() {
		_, err := b.Campaign(ctx, "b")
		led <- err
	}()
	time.Sleep(200 * time.Millisecond) // b parks
	released := time.Now()
	require.NoError(t, a.Resign(ctx))
	select {
	case err := <-led:
		require.NoError(t, err)
		assert.Less(t, time.Since(released), redistest.Prompt)
	case <-time.After(redistest.Prompt):
		t.Fatal("the release did not wake the candidate")
	}
	for _, o := range observers {
		assert.Equal(t, "b", next(t, o).Value)
	}
	require.NoError(t, b.Resign(ctx))
}

// Observe's channel closes when the Client closes.
func TestObserveEndsWithTheClient(t *testing.T) {
	ctx := redistest.Context(t)
	c, _ := newClient(t)
	seen := election.New(c, electionName(t)).Observe(ctx)
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, c.Close())
	select {
	case _, ok := <-seen:
		assert.False(t, ok)
	case <-time.After(redistest.Prompt):
		t.Fatal("Observe outlived its Client")
	}
	_, err := election.New(c, "x").Campaign(ctx, "v")
	assert.ErrorIs(t, err, interlock.ErrClosed)
}

// A name whose key holds something else is refused, not waited for.
func TestForeignKey(t *testing.T) {
	c, rc := newClient(t)
	ctx := redistest.Context(t)
	name := electionName(t)
	require.NoError(t, rc.Do(ctx, rc.B().Set().Key(name).Value("application data").Build()).Error())
	e := election.New(c, name)
	_, err := e.Campaign(ctx, "v")
	assert.ErrorIs(t, err, interlock.ErrInvalid)
	_, err = e.Leader(ctx)
	assert.ErrorIs(t, err, interlock.ErrInvalid)
	v, err := rc.Do(ctx, rc.B().Get().Key(name).Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "application data", v, "left as it was")
}

// An Observe whose receiver stopped reading ends with the Client too.
func TestObserveUnreadEndsWithTheClient(t *testing.T) {
	ctx := redistest.Context(t)
	c, _ := newClient(t)
	name := electionName(t)
	holder, _ := newClient(t)
	_, err := election.New(holder, name).Campaign(ctx, "a")
	require.NoError(t, err)
	seen := election.New(c, name).Observe(context.Background()) // never read, never cancelled
	time.Sleep(100 * time.Millisecond)                          // its first send waits
	require.NoError(t, c.Close())
	time.Sleep(300 * time.Millisecond)
	_, open := <-seen
	assert.False(t, open, "Observe gave up its send when the Client closed")
}
