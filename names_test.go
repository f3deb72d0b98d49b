package interlock_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/runtime"
)

// The kinds' keys under a NameMapper are checked, kind by kind, in
// compat_test (namemap_test.go and the Java interop).

func TestPrefixNames(t *testing.T) {
	m := interlock.PrefixNames("app:")
	assert.Equal(t, "app:orders:42", m.Map("orders:42"))
	assert.Equal(t, "orders:42", m.Unmap("app:orders:42"))
	assert.Equal(t, "other", m.Unmap("other"), "a name without the prefix is left as it is")
	for _, name := range []string{"", "x", "app:", "{tag}x", "日本語"} {
		assert.Equal(t, name, m.Unmap(m.Map(name)))
	}
	id := interlock.PrefixNames("")
	assert.Equal(t, "x", id.Map("x"))
}

func TestWithNameMapper(t *testing.T) {
	c := newClient(t)
	assert.Nil(t, runtime.Of(c).Cfg.Names, "no mapper by default")

	c = newClient(t, interlock.WithNameMapper(nil))
	assert.Nil(t, runtime.Of(c).Cfg.Names)

	c = newClient(t, interlock.WithNameMapper(interlock.PrefixNames("app:")))
	require.NotNil(t, runtime.Of(c).Cfg.Names)
	assert.Equal(t, "app:x", runtime.Of(c).Cfg.Names.Map("x"))
}

// TestNameMapperObserver: the Observer and the logger hear lost holds the
// engine did not tag under the caller's names, whichever option comes
// first; the scheduler reports the mapped key.
func TestNameMapperObserver(t *testing.T) {
	lost := errors.New("lost")
	obs := &namesObserver{}
	for _, opts := range [][]interlock.Option{
		{interlock.WithNameMapper(interlock.PrefixNames("app:")), interlock.WithObserver(obs)},
		{interlock.WithObserver(obs), interlock.WithNameMapper(interlock.PrefixNames("app:"))},
	} {
		c := newClient(t, opts...)
		runtime.Of(c).Cfg.Observer.Lost("app:orders:42", nil, lost)
	}
	assert.Equal(t, []string{"orders:42", "orders:42"}, obs.lost)

	var buf bytes.Buffer
	c := newClient(t, interlock.WithLogger(slog.New(slog.NewTextHandler(&buf, nil))),
		interlock.WithNameMapper(interlock.PrefixNames("app:")))
	runtime.Of(c).Cfg.Observer.Lost("app:orders:42", nil, lost)
	assert.Contains(t, buf.String(), "lock=orders:42 ")
}

type namesObserver struct{ lost []string }

func (o *namesObserver) Observe(_ context.Context, e interlock.Event) {
	if e.Op == interlock.OpLost {
		o.lost = append(o.lost, e.Name)
	}
}
