package interlock_test

import (
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

func TestSafeModeAndMaxHoldSettings(t *testing.T) {
	c := newClient(t)
	n, timeout := c.ReplicaAcks()
	assert.Zero(t, n, "safe mode is off by default")
	assert.Zero(t, timeout)
	assert.Zero(t, c.MaxHold(), "no max hold by default")

	c = newClient(t, interlock.WithReplicaAcks(2, 250*time.Millisecond), interlock.WithMaxHold(time.Minute))
	n, timeout = c.ReplicaAcks()
	assert.Equal(t, 2, n)
	assert.Equal(t, 250*time.Millisecond, timeout)
	assert.Equal(t, time.Minute, c.MaxHold())

	c, err := interlock.New(redistest.NewClient(t, addr), interlock.WithMaxHold(0))
	require.NoError(t, err, "0 turns max hold off")
	require.NoError(t, c.Close())
}
