package security_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/election"
	"github.com/interlock-go/interlock/internal/redistest"
)

// aclElection is the election's line of docs/operations.md, on top of
// aclCommon.
var aclElection = []string{"+incr", "+hkeys", "+hmget", "~redisson_lock_token:{app:*", "~interlock_leader:{app:*", "&interlock_leader__channel:{app:*"}

// TestMinimalACLElection runs an election under the minimal ACL: two
// candidates on two Clients, the leader's renewal, Leader, Observe woken
// by the announcement and the release, Resign waking the other candidate;
// ACL LOG stays empty. Without the election's line, a campaign is refused.
func TestMinimalACLElection(t *testing.T) {
	redistest.RequireProcess(t)
	srv := redistest.Standalone(t)
	admin := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	user := "locker-election"
	setUser(t, admin, user, "s3cret-election", append(append([]string(nil), aclCommon...), aclElection...))
	clients := make([]*interlock.Client, 2)
	for i := range clients {
		rc, err := userClient(t, srv.Addr(), user, "s3cret-election")
		require.NoError(t, err)
		c, err := interlock.New(rc, interlock.WithWatchdogTimeout(time.Second))
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		clients[i] = c
	}
	name := "app:acl:election"
	a, b := election.New(clients[0], name), election.New(clients[1], name, election.WithRecheck(time.Minute))
	octx, stop := context.WithCancel(ctx)
	seen := b.Observe(octx)

	la, err := a.Campaign(ctx, "a")
	require.NoError(t, err)
	select {
	case ld := <-seen:
		assert.Equal(t, "a", ld.Value)
	case <-time.After(5 * time.Second):
		t.Fatal("the observer missed the leader")
	}
	time.Sleep(1500 * time.Millisecond) // renewals
	require.NoError(t, la.Context().Err())
	ld, err := b.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, la.Token(), ld.Token)

	led := make(chan error, 1)
	go func() {
		_, err := b.Campaign(ctx, "b")
		led <- err
	}()
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, a.Resign(ctx))
	select {
	case err := <-led:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the release did not wake the other candidate")
	}
	select {
	case ld := <-seen:
		assert.Equal(t, "b", ld.Value)
	case <-time.After(5 * time.Second):
		t.Fatal("the observer missed the new leader")
	}
	require.NoError(t, b.Resign(ctx))
	stop()
	for range seen {
	}
	for _, c := range clients {
		require.NoError(t, c.Close())
	}
	assert.Empty(t, aclDenials(t, admin, user), "ACL LOG for %s", user)

	// The reentrant lock's line alone does not do.
	setUser(t, admin, "locker-noelection", "s3cret", aclCommon)
	rc, err := userClient(t, srv.Addr(), "locker-noelection", "s3cret")
	require.NoError(t, err)
	c, err := interlock.New(rc)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = election.New(c, name).Campaign(ctx, "x")
	assert.Error(t, err)
}
