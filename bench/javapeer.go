package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The Java Redisson peer of compat_test (compat_test/peer), started in its
// own JVM and driven by its JSON-lines protocol. The bench uses only the
// ops that measure inside the JVM (bench, holdMany, releaseMany), so the
// pipe is never on a measured path.

const (
	javaPeerVersion  = "4.7.0"
	javaPeerJVMFlags = "-Xms512m -Xmx1g -XX:+UseSerialGC"
	javaPeerReady    = 90 * time.Second
)

// javaPeerJar returns the peer jar, building it with mvn (as the compat
// driver does) when it is missing or older than the peer's sources.
func javaPeerJar(ctx context.Context) (string, error) {
	if _, err := exec.LookPath("java"); err != nil {
		return "", err
	}
	dir, err := filepath.Abs(filepath.Join("..", "compat_test", "peer"))
	if err != nil {
		return "", err
	}
	jar := filepath.Join(dir, "target", "interlock-peer-"+javaPeerVersion+".jar")
	if javaJarFresh(dir, jar) {
		return jar, nil
	}
	if _, err := exec.LookPath("mvn"); err != nil {
		return "", fmt.Errorf("%s is missing or stale and mvn is not on PATH: %w", jar, err)
	}
	cmd := exec.CommandContext(ctx, "mvn", "-q", "-B", "-f", filepath.Join(dir, "pom.xml"),
		"-Dredisson.version="+javaPeerVersion, "-DskipTests", "package")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args, " "), err, out.String())
	}
	return jar, nil
}

func javaJarFresh(dir, jar string) bool {
	ji, err := os.Stat(jar)
	if err != nil {
		return false
	}
	fresh := true
	_ = filepath.WalkDir(filepath.Join(dir, "src"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if fi, err := d.Info(); err == nil && fi.ModTime().After(ji.ModTime()) {
			fresh = false
		}
		return nil
	})
	if fi, err := os.Stat(filepath.Join(dir, "pom.xml")); err == nil && fi.ModTime().After(ji.ModTime()) {
		fresh = false
	}
	return fresh
}

// javaPeer is one running peer JVM. Its methods serialise requests.
type javaPeer struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Scanner
	stderr *bytes.Buffer
	mu     sync.Mutex
	nextID int64
}

// startJavaPeer starts the peer against one server at addrs[0], or with
// cluster against the cluster that addrs seed (useClusterServers), with
// the given watchdog (0: Redisson's default).
func startJavaPeer(ctx context.Context, addrs []string, cluster bool, watchdog time.Duration) (*javaPeer, error) {
	jar, err := javaPeerJar(ctx)
	if err != nil {
		return nil, err
	}
	args := append(strings.Fields(javaPeerJVMFlags), "-jar", jar)
	if !cluster {
		args = append(args, "--redis", "redis://"+addrs[0])
	} else {
		args = append(args, "--cluster", strings.Join(addrs, ","))
	}
	if watchdog > 0 {
		args = append(args, "--watchdog-ms", strconv.FormatInt(watchdog.Milliseconds(), 10))
	}
	p := &javaPeer{cmd: exec.Command("java", args...), stderr: &bytes.Buffer{}}
	p.cmd.Stderr = p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	p.out = bufio.NewScanner(stdout)
	p.out.Buffer(make([]byte, 64*1024), 4*1024*1024)
	ready := make(chan error, 1)
	go func() {
		if !p.out.Scan() {
			ready <- fmt.Errorf("peer exited before ready: %v", p.out.Err())
			return
		}
		var r struct {
			Ready    bool   `json:"ready"`
			Redisson string `json:"redisson"`
		}
		if err := json.Unmarshal(p.out.Bytes(), &r); err != nil || !r.Ready {
			ready <- fmt.Errorf("bad ready line %q", p.out.Bytes())
			return
		}
		ready <- nil
	}()
	select {
	case err = <-ready:
	case <-time.After(javaPeerReady):
		err = errors.New("peer not ready in time")
	}
	if err != nil {
		p.close()
		return nil, fmt.Errorf("the Redisson peer: %w; stderr:\n%s", err, p.stderr)
	}
	return p, nil
}

// do sends one request on logical thread 1 (the holdMany locks belong to
// it) and decodes the result into out.
func (p *javaPeer) do(req map[string]any, out any) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nextID++
	req["id"] = p.nextID
	if _, ok := req["thread"]; !ok {
		req["thread"] = 1
	}
	line, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := p.stdin.Write(append(line, '\n')); err != nil {
		return err
	}
	for p.out.Scan() {
		var r struct {
			ID     int64           `json:"id"`
			OK     bool            `json:"ok"`
			Result json.RawMessage `json:"result"`
			Error  string          `json:"error"`
		}
		if err := json.Unmarshal(p.out.Bytes(), &r); err != nil || r.ID != p.nextID {
			continue
		}
		if !r.OK {
			return fmt.Errorf("peer %v: %s", req["op"], r.Error)
		}
		if out == nil {
			return nil
		}
		return json.Unmarshal(r.Result, out)
	}
	return fmt.Errorf("peer exited: %v; stderr:\n%s", p.out.Err(), p.stderr)
}

// close asks the peer to quit and kills it after 15 s.
func (p *javaPeer) close() {
	_, _ = p.stdin.Write([]byte(`{"id":0,"op":"quit"}` + "\n"))
	_ = p.stdin.Close()
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

// javaBenchResult is the reply of the peer's "bench" op.
type javaBenchResult struct {
	Ops       int64   `json:"ops"`
	Seconds   float64 `json:"seconds"`
	OpsPerSec float64 `json:"opsPerSec"`
	LockP50Us float64 `json:"lockP50Us"`
	LockP99Us float64 `json:"lockP99Us"`
	LockMaxUs float64 `json:"lockMaxUs"`
	PairP50Us float64 `json:"pairP50Us"`
	PairP99Us float64 `json:"pairP99Us"`
	PairMaxUs float64 `json:"pairMaxUs"`
}

// javaHoldResult is the reply of the peer's "holdMany" op.
type javaHoldResult struct {
	Count      int64   `json:"count"`
	Ms         float64 `json:"ms"`
	HeapBefore int64   `json:"heapBeforeBytes"`
	HeapAfter  int64   `json:"heapAfterBytes"`
}
