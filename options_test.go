package interlock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
)

func TestSafeModeAndMaxHoldOptionsAreValidated(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	for name, opt := range map[string]interlock.Option{
		"no replicas":      interlock.WithReplicaAcks(0, time.Second),
		"negative count":   interlock.WithReplicaAcks(-1, time.Second),
		"no timeout":       interlock.WithReplicaAcks(1, 0),
		"sub-ms timeout":   interlock.WithReplicaAcks(1, 500*time.Microsecond),
		"negative timeout": interlock.WithReplicaAcks(1, -time.Second),
		"negative maxhold": interlock.WithMaxHold(-time.Second),
	} {
		c, err := interlock.New(rc, opt)
		assert.ErrorIs(t, err, interlock.ErrInvalid, name)
		assert.Nil(t, c, name)
	}
}

func TestMaxHoldZeroIsAccepted(t *testing.T) {
	c, err := interlock.New(redistest.NewClient(t, addr), interlock.WithMaxHold(0))
	require.NoError(t, err, "0 turns max hold off")
	require.NoError(t, c.Close())
}

func TestClockSkewLimitNegative(t *testing.T) {
	_, err := interlock.New(redistest.NewClient(t, addr), interlock.WithClockSkewLimit(-time.Second))
	if !errors.Is(err, interlock.ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
}

func TestReplicaSyncOptionIsValidated(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	for name, opts := range map[string][]interlock.Option{
		"no timeout":       {interlock.WithReplicaSync(0)},
		"sub-ms timeout":   {interlock.WithReplicaSync(500 * time.Microsecond)},
		"negative timeout": {interlock.WithReplicaSync(-time.Second)},
		"with safe mode":   {interlock.WithReplicaAcks(1, time.Second), interlock.WithReplicaSync(time.Second)},
		"then safe mode":   {interlock.WithReplicaSync(time.Second), interlock.WithReplicaAcks(1, time.Second)},
		"mode alone":       {interlock.WithReplicaSyncMode(interlock.SyncAck)},
		"unknown mode":     {interlock.WithReplicaSync(time.Second), interlock.WithReplicaSyncMode(interlock.SyncMode(7))},
	} {
		c, err := interlock.New(rc, opts...)
		assert.ErrorIs(t, err, interlock.ErrInvalid, name)
		assert.Nil(t, c, name)
	}
	c, err := interlock.New(rc, interlock.WithReplicaSync(interlock.DefaultReplicaSyncTimeout))
	require.NoError(t, err)
	require.NoError(t, c.Close())
	c, err = interlock.New(rc, interlock.WithReplicaSyncMode(interlock.SyncAck), interlock.WithReplicaSync(time.Second))
	require.NoError(t, err)
	require.NoError(t, c.Close())
}
