package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A send outlives its caller's ctx, and its Pending reports the reply.
func TestSendDetachedOutlivesTheCaller(t *testing.T) {
	r := newRuntime(t)
	release := make(chan struct{})
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	res, p := r.SendDetached(ctx, time.Minute, func(sctx context.Context) rueidis.RedisResult {
		<-release
		return rueidis.NewErrorResult(sctx.Err()) // nil: its own ctx did not end
	})
	assert.ErrorIs(t, res.Error(), context.DeadlineExceeded)
	require.NotNil(t, p)
	select {
	case <-p.Done():
		t.Fatal("done before the send answered")
	default:
	}
	close(release)
	<-p.Done()
	assert.NoError(t, p.Result().Error())
}

// A ctx that cannot end sends on the caller's goroutine; an ended one
// sends nothing; a send that answers in time has no Pending.
func TestSendDetachedInline(t *testing.T) {
	r := newRuntime(t)
	sent := 0
	send := func(context.Context) rueidis.RedisResult {
		sent++
		return rueidis.NewErrorResult(errors.New("answered"))
	}
	res, p := r.SendDetached(context.Background(), time.Minute, send)
	assert.Nil(t, p)
	assert.EqualError(t, res.Error(), "answered")

	ended, cancel := context.WithCancel(t.Context())
	cancel()
	res, p = r.SendDetached(ended, time.Minute, send)
	assert.Nil(t, p)
	assert.ErrorIs(t, res.Error(), context.Canceled)
	assert.Equal(t, 1, sent)

	res, p = r.SendDetached(t.Context(), time.Minute, send)
	assert.Nil(t, p)
	assert.EqualError(t, res.Error(), "answered")
	assert.Equal(t, 2, sent)
}

// Close makes a send still waiting give up, and joins it; the bound is
// the send's deadline, which a send that honours it (rueidis, on its
// connection) ends by.
func TestSendDetachedEndsByBoundAndClose(t *testing.T) {
	r := newRuntime(t)
	wait := func(sctx context.Context) rueidis.RedisResult {
		dl, ok := sctx.Deadline()
		if !ok {
			return rueidis.NewErrorResult(errors.New("no deadline"))
		}
		select {
		case <-sctx.Done():
			return rueidis.NewErrorResult(sctx.Err())
		case <-time.After(time.Until(dl)):
			return rueidis.NewErrorResult(context.DeadlineExceeded)
		}
	}

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	_, p := r.SendDetached(ctx, 100*time.Millisecond, wait)
	require.NotNil(t, p)
	<-p.Done()
	assert.ErrorIs(t, p.Result().Error(), context.DeadlineExceeded)

	ctx2, cancel2 := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel2()
	_, p = r.SendDetached(ctx2, time.Hour, wait)
	require.NotNil(t, p)
	r.Close()
	select {
	case <-p.Done():
	default:
		t.Fatal("Close returned before the send it stopped")
	}
	assert.ErrorIs(t, p.Result().Error(), context.Canceled)
}
