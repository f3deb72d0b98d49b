package conformance_test

import (
	"testing"

	"github.com/interlock-go/interlock/internal/redistest"
)

// addr is the package's redis-server, which every kind's suite shares; the
// cluster half of the suites shares one cluster too
// (redistest.SharedCluster), which Main stops.
var addr string

func TestMain(m *testing.M) { redistest.Main(m, redistest.ShareServer(&addr)) }
