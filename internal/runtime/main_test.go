package runtime_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/runtime"
)

// addr is the package's shared redis-server.
var addr string

func TestMain(m *testing.M) {
	redistest.Main(m, func() (func(), error) {
		s, err := redistest.Start()
		if err != nil {
			return nil, err
		}
		addr = s.Addr()
		return s.Stop, nil
	})
}

// newRuntime returns the Runtime of a new Client on the shared server,
// closed when t ends.
func newRuntime(t testing.TB, opts ...interlock.Option) *runtime.Runtime {
	t.Helper()
	c, err := interlock.New(redistest.NewClient(t, addr), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return runtime.Of(c)
}
