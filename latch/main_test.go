package latch_test

import (
	"testing"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
)

// addr is the package's shared redis-server; the tests that run on a
// cluster share one too (redistest.SharedCluster).
var addr string

func TestMain(m *testing.M) { redistest.Main(m, redistest.ShareServer(&addr)) }

// newClient and wrap return interlock Clients closed when the test ends: on
// the shared server, with the rueidis client under it, or on a rueidis
// client of the test's.
var newClient, wrap = redistest.Clients(&addr, interlock.New)

// target is a deployment the tests run on: the shared standalone server
// or the shared 3-master cluster.
type target = redistest.Target[*interlock.Client, interlock.Option]

// each runs f on the standalone server, then on the cluster.
func each(t *testing.T, f func(t *testing.T, tg target)) { redistest.Each(t, addr, interlock.New, f) }

// latchName returns a name unique to the test. Every key that contains it
// is deleted when the test ends, so that -count reruns start afresh.
func latchName(t *testing.T) string { return redistest.Name(t, "latch-test:", addr) }

func second[T any](_ T, err error) error { return err }
