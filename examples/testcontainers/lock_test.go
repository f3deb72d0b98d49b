// Package testcontainers_test shows how to test code that uses interlock: the
// test starts a Redis server in a container with testcontainers-go, points a
// rueidis client at it and takes a lock. docs/testing.md explains it.
//
// Run it with: go test ./examples/testcontainers
//
// Without a Docker engine the test skips, or fails when CI=true.
package testcontainers_test

import (
	"context"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/redis/rueidis"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/rlock"
)

// image is the server image. interlock's CI builds it locally
// (scripts/build-images) because no registry is reachable there; with one,
// any Redis 7 or 8 or Valkey 8 image, such as "redis:8.0", works the same.
const image = "interlock-test/redis:7.0.15"

// The Docker daemon of interlock's CI has no bridge network
// (dockerd --bridge=none), so every container uses the host network and binds
// 127.0.0.1 on a free port. Two testcontainers-go settings go with that:
//
//   - a runtime provider whose default network is "host" and whose containers
//     are reached at 127.0.0.1 (otherwise testcontainers-go creates a bridge
//     network, and on a machine that looks like a container it dials the
//     default gateway);
//   - no Ryuk reaper, which is an image to pull; t.Cleanup removes the
//     containers instead.
//
// On a usual Docker with its default bridge, leave both out and publish the
// port instead: ExposedPorts: []string{"6379/tcp"}, then ctr.Endpoint(ctx, "").
func init() {
	err := testcontainers.RegisterProvider("hostnet", func() testcontainers.RuntimeProvider {
		return hostNet{}
	})
	if err != nil {
		panic(err)
	}
}

type hostNet struct{}

func (hostNet) Initialize(context.Context) (testcontainers.RuntimeConfig, error) {
	return testcontainers.RuntimeConfig{DefaultBridgeNetwork: "host", PublishedHost: "127.0.0.1"}, nil
}

func TestMain(m *testing.M) {
	// Read once, by the first testcontainers-go call: set them before.
	os.Setenv("TESTCONTAINERS_PROVIDER", "hostnet")
	os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true") // exactly "true"
	os.Exit(m.Run())
}

// startRedis starts a Redis server in a container for the test t, removes it
// when t ends, and returns its address.
func startRedis(t *testing.T) string {
	t.Helper()
	requireDocker(t)
	ctx := t.Context()
	port := freePort(t)
	ctr, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image: image,
			Cmd:   []string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"},
			HostConfigModifier: func(hc *container.HostConfig) {
				hc.NetworkMode = "host"
			},
			WaitingFor: wait.ForAll(
				wait.ForLog("Ready to accept connections"),
				wait.ForListeningPort(port+"/tcp").SkipInternalCheck(),
			).WithDeadline(30 * time.Second),
		},
		Started: true,
	})
	testcontainers.CleanupContainer(t, ctr) // even when err != nil
	if err != nil {
		t.Fatalf("starting %s: %v", image, err)
	}
	host, err := ctr.Host(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort(host, port)
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// requireDocker skips t, or fails it when CI=true, unless a Docker engine
// answers and has the image (testcontainers-go would try to pull it).
func requireDocker(t *testing.T) {
	t.Helper()
	fail := t.Skipf
	if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
		fail = t.Fatalf
	}
	ctx := t.Context()
	dc, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		fail("no Docker engine: %v", err)
		return
	}
	defer dc.Close()
	if _, err := dc.ImageInspect(ctx, image); err != nil {
		fail("image %s: %v (build it with scripts/build-images)", image, err)
	}
}

// TestLockWaitsForTheHolder is what a test of code that locks looks like: a
// real server, a real client, and two owners of one lock (in interlock, as in
// Redisson, each goroutine is an owner).
func TestLockWaitsForTheHolder(t *testing.T) {
	addr := startRedis(t)
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	c, err := interlock.New(rc)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	m := rlock.New(c, "orders:42")
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}

	// Another goroutine waits for the lock until this one unlocks it.
	acquired := make(chan error, 1)
	go func() {
		err := m.Lock(ctx)
		if err == nil {
			err = m.Unlock(ctx)
		}
		acquired <- err
	}()
	select {
	case err := <-acquired:
		t.Fatalf("the other goroutine got the lock while it was held (err %v)", err)
	case <-time.After(200 * time.Millisecond):
	}

	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-acquired; err != nil {
		t.Fatalf("the other goroutine: %v", err)
	}
}
