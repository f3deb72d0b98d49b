package ratelimit_test

import (
	"testing"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
)

// addr is the package's shared redis-server; the tests that run on a
// cluster share one too (redistest.SharedCluster).
var addr string

func TestMain(m *testing.M) { redistest.Main(m, redistest.ShareServer(&addr)) }

// rlName returns a key unique to the test. Every key that contains it
// is deleted when the test ends, so that -count reruns start afresh.
func rlName(t *testing.T) string { return redistest.Name(t, "rl-test:", addr) }

// target is a deployment the behaviour tests run on: the shared
// standalone server or the shared 3-master cluster.
type target = redistest.Target[*interlock.Client, interlock.Option]

// each runs f on the standalone server, then on the cluster.
func each(t *testing.T, f func(t *testing.T, tg target)) { redistest.Each(t, addr, interlock.New, f) }

// newClient opens a Client on a new rueidis client of the shared server.
var newClient, _ = redistest.Clients(&addr, interlock.New)
