package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The runtime's passing failures are retried within the bound; any other
// error is returned at once; giving up says how often and how long.
func TestRetryTransient(t *testing.T) {
	freeze := errors.New("Error response from daemon: Cannot pause container 0123: OCI runtime pause failed: unable to freeze: unknown")
	busy := errors.New("OCI runtime start failed: mount: device or resource busy")
	other := errors.New("No such container: 0123")
	ctx := t.Context()

	t.Run("passes", func(t *testing.T) {
		var calls int
		err := retryTransient(ctx, "pause x", 5, time.Millisecond, nil, func(context.Context) error {
			calls++
			if calls < 3 {
				return freeze
			}
			return nil
		})
		require.NoError(t, err)
		assert.Equal(t, 3, calls)
	})
	t.Run("not transient", func(t *testing.T) {
		var calls int
		err := retryTransient(ctx, "pause x", 5, time.Millisecond, nil, func(context.Context) error {
			calls++
			return other
		})
		assert.Same(t, other, err, "returned as it is")
		assert.Equal(t, 1, calls)
	})
	t.Run("gives up", func(t *testing.T) {
		var calls int
		err := retryTransient(ctx, "starting x again", 4, time.Millisecond, nil, func(context.Context) error {
			calls++
			return busy
		})
		require.ErrorIs(t, err, busy)
		assert.Equal(t, 4, calls)
		assert.Regexp(t, `^starting x again: gave up after 4 attempts in \d+ms, each failing with a transient runtime error; the last: OCI runtime start failed`, err.Error())
	})
	t.Run("done after all", func(t *testing.T) {
		var calls int
		err := retryTransient(ctx, "pause x", 5, time.Millisecond, func(context.Context) bool { return true }, func(context.Context) error {
			calls++
			return freeze
		})
		require.NoError(t, err, "the failed call froze the container all the same")
		assert.Equal(t, 1, calls)
	})
	t.Run("context ends", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		err := retryTransient(ctx, "pause x", 100, 10*time.Millisecond, nil, func(context.Context) error { return freeze })
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorIs(t, err, freeze)
		assert.Contains(t, err.Error(), "pause x: context deadline exceeded after")
	})
}
