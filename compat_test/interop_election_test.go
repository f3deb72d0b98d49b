package compat_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/election"
)

// interopElection: a Java RFencedLock holder of an election's name is its
// leader for Go (Leader, Observe), with an empty value and its token, and
// a Go candidate leads once Java unlocks, woken by Java's release; a Go
// leader is the holder for Java, whose lock() waits for Go's Resign and
// whose forceUnlock ends the Go term with ErrLockLost.
func interopElection(t *testing.T, e *interopEnv) {
	name := unique("interop-election")
	th := e.threads(1)[0]
	jOwner := e.p.Owner(t, th)
	ctx := testCtx(t, 2*time.Minute)
	c := newLockClient(t, e.rc, interlock.WithWatchdogTimeout(time.Second))
	el := election.New(c, name, election.WithRecheck(time.Minute))
	octx, stop := context.WithCancel(ctx)
	defer stop()
	seen := el.Observe(octx)
	next := func(what string) election.Leader {
		t.Helper()
		select {
		case ld := <-seen:
			return ld
		case <-time.After(wakeBound):
			t.Fatalf("Observe did not see %s", what)
		}
		return election.Leader{}
	}

	// Java leads: Go sees its holder, its token and no value.
	jTok := e.java(t, peerReq{Thread: th, Op: "lockToken", Kind: "fenced", Name: name}).Int(t)
	ld := next("the Java leader")
	assert.Equal(t, election.Leader{Value: "", Token: uint64(jTok), Owner: jOwner}, ld)
	got, err := el.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, ld, got)

	// A Go candidate waits for Java, and is woken by its unlock.
	led := make(chan *election.Leadership, 1)
	go func() {
		l, err := el.Campaign(ctx, "go-leader")
		assert.NoError(t, err)
		led <- l
	}()
	select {
	case <-led:
		t.Fatal("Go leads while Java holds")
	case <-time.After(300 * time.Millisecond):
	}
	e.javaUnlock(t, th, "fenced", name)
	var lead *election.Leadership
	select {
	case lead = <-led:
	case <-time.After(wakeBound):
		t.Fatal("Java's unlock did not wake the Go candidate")
	}
	require.NotNil(t, lead)
	assert.Equal(t, uint64(jTok+1), lead.Token())
	ld = next("the Go leader")
	assert.Equal(t, "go-leader", ld.Value)
	assert.Equal(t, lead.Token(), ld.Token)

	// Java sees the Go leader as the holder, and waits for its Resign.
	assert.True(t, e.java(t, peerReq{Thread: th, Op: "isLocked", Kind: "fenced", Name: name}).Bool(t))
	assert.False(t, e.javaTry(t, th, "fenced", name))
	assert.Equal(t, int64(lead.Token()), e.java(t, peerReq{Thread: th, Op: "getToken", Kind: "fenced", Name: name}).Int(t))
	jLock := e.javaStart(t, th, "fenced", name) // lock(), which takes a token too
	e.awaitParked(t, th)
	require.NoError(t, el.Resign(ctx))
	select {
	case r := <-jLock:
		r.mustOK(t)
	case <-time.After(wakeBound):
		t.Fatal("the Go leader's Resign did not wake Java's lock()")
	}
	assert.Equal(t, int64(lead.Token())+1, e.java(t, peerReq{Thread: th, Op: "getToken", Kind: "fenced", Name: name}).Int(t))
	ld = next("the second Java leader")
	assert.Equal(t, election.Leader{Value: "", Token: lead.Token() + 1, Owner: jOwner}, ld)
	e.javaUnlock(t, th, "fenced", name)

	// Java's forceUnlock deposes a Go leader.
	lead, err = el.Campaign(ctx, "deposed")
	require.NoError(t, err)
	assert.True(t, e.java(t, peerReq{Thread: th, Op: "forceUnlock", Kind: "fenced", Name: name}).Bool(t))
	select {
	case <-lead.Context().Done():
		assert.ErrorIs(t, context.Cause(lead.Context()), interlock.ErrLockLost)
	case <-time.After(wakeBound):
		t.Fatal("the Go term outlived Java's forceUnlock")
	}
	assert.ErrorIs(t, el.Resign(ctx), interlock.ErrNotHeld)
	_, err = el.Leader(ctx)
	assert.ErrorIs(t, err, election.ErrNoLeader)
}
