package redistest

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

// A port taken between FreePort and the server's bind is reported as
// errAddrInUse, on which startContainer retries with another port, and the
// failed container is removed.
func TestContainerPortTaken(t *testing.T) {
	if err := dockerReady(); err != nil {
		SkipOrFail(t, err)
	}
	if err := checkImage(t.Context(), Redis7); err != nil {
		SkipOrFail(t, err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	start := time.Now()
	s, err := runContainer(ctx, Redis7, port, nil, false)
	if err == nil {
		s.Stop()
		t.Fatalf("a server started on port %d, which this test holds", port)
	}
	if !errors.Is(err, errAddrInUse) {
		t.Fatalf("got %v, want an error wrapping errAddrInUse", err)
	}
	t.Logf("reported in %v: %v", time.Since(start).Round(time.Millisecond), err)
}
