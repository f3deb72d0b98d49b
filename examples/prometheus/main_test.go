package prometheus_test

import (
	"testing"

	"github.com/interlock-go/interlock/internal/redistest"
)

// redisAddr is the server the example uses: REDIS_ADDR when set, else a
// redis-server started from PATH on a free loopback port.
var redisAddr string

func TestMain(m *testing.M) {
	redistest.Main(m, func() (func(), error) {
		s, err := redistest.Start()
		if err != nil {
			return nil, err
		}
		redisAddr = s.Addr()
		return s.Stop, nil
	})
}
