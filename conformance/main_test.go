package conformance_test

import (
	"testing"

	"github.com/interlock-go/interlock/internal/redistest"
)

// addr is the package's redis-server, which every kind's suite shares; the
// cluster and slot-enforcing thirds of the suites share one cluster and
// one endpoint too (redistest.SharedCluster, SharedSlotted), which Main
// stops.
var addr string

func TestMain(m *testing.M) { redistest.Main(m, redistest.ShareServer(&addr)) }
