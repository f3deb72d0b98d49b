package redistest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/interlock-go/interlock/internal/dockerwire"
	"github.com/interlock-go/interlock/internal/redisproc"
)

// A sentinel is the image's server in sentinel mode (<server> <config file>
// --sentinel), on either backend. It needs a config file it can rewrite
// with its state, named as the first argument; its port and bind address
// come from the command line, which overrides the file.

const (
	// sentinelConfigPath is a sentinel container's config file: in the
	// images' WORKDIR, which every image of the matrix has, writable.
	sentinelConfigPath = "/data/sentinel.conf"
	// sentinelReadyLine is what every sentinel of the matrix (Redis 6.0 to
	// 8, Valkey 8 and 9) logs once it runs; a sentinel never logs
	// readyLine.
	sentinelReadyLine = "Sentinel ID is"
)

// startSentinelServer starts a sentinel whose config file holds the
// directives of config, one a line: a redis-server process whose file is
// dir/name, or, when EnvImage names an image, a container of that image.
// Without redis-server, a Docker engine or the image, the error wraps
// ErrUnavailable.
func startSentinelServer(dir, name string, config []string) (*Server, error) {
	text := strings.Join(append([]string{
		"# Written by redistest; the sentinel rewrites this file. Its port and",
		"# bind address are set on the command line.",
	}, config...), "\n") + "\n"
	if img, ok, err := envImage(); ok {
		if err != nil {
			return nil, err
		}
		s, err := startContainerSentinel(img, text)
		if err == nil {
			announce("sentinel", s)
		}
		return s, err
	}
	bin, err := lookBinary("redis-server")
	if err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, name)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	p, err := redisproc.Start(context.Background(), redisproc.Config{
		Bin: bin, ConfigFile: conf, Args: []string{"--sentinel"}, DirPattern: "redistest-",
	})
	if err != nil {
		return nil, err
	}
	return &Server{addr: p.Addr(), port: p.Port(), proc: p}, nil
}

// startContainerSentinel starts a sentinel container of img on a free
// port, its config file written into the container before it starts (the
// images need no shell for it), retrying on another port when the port was
// taken meanwhile.
func startContainerSentinel(img Image, config string) (*Server, error) {
	if err := dockerReady(); err != nil {
		return nil, err
	}
	return onFreePort(img, false, func(ctx context.Context, port int) (*Server, error) {
		return runSentinelContainer(ctx, img, port, config)
	})
}

// runSentinelContainer creates and starts one sentinel container and
// checks its server's version.
func runSentinelContainer(ctx context.Context, img Image, port int, config string) (*Server, error) {
	p := strconv.Itoa(port)
	rep, err := docker(ctx, dockerwire.Request{
		Op:         dockerwire.OpRun,
		Image:      img.Ref,
		Entrypoint: []string{"/usr/bin/" + img.Server + "-server"},
		Args:       []string{sentinelConfigPath, "--sentinel", "--port", p, "--bind", "127.0.0.1"},
		Files:      []dockerwire.File{{Path: sentinelConfigPath, Content: config, Mode: 0o600}},
		Port:       port,
		ReadyLine:  sentinelReadyLine,
		PID:        os.Getpid(),
	})
	if err != nil {
		return nil, fmt.Errorf("redistest: sentinel: %w", err)
	}
	c := &Container{image: img, id: rep.Ctr, addr: "127.0.0.1:" + p}
	if err := c.check(ctx); err != nil {
		err = fmt.Errorf("redistest: sentinel %s: %w%s", c, err, c.logTail())
		c.stop()
		return nil, err
	}
	return &Server{addr: c.addr, port: port, ctr: c}, nil
}
