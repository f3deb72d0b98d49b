package reliability

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A small driver of compat_test's Java peer (compat_test/peer, a Redisson
// client in its own JVM, driven by JSON lines; the protocol is described in
// Peer.java). compat_test's own driver lives in its test files, which this
// package cannot import; this one knows only what T24 needs: start the
// peer against one address, send requests from any goroutine, read their
// replies, stop.

const (
	jvmVersion      = "4.7.0"                     // the Redisson version T24 runs
	jvmReadyTimeout = 60 * time.Second            // JVM start and Redisson connect
	jvmStopTimeout  = 15 * time.Second            // quit to exit, before we kill
	jvmBuildTimeout = 10 * time.Minute            // mvn package, cold repository included
	jvmFlags        = "-Xmx256m -XX:+UseSerialGC" // small and quiet on a shared two-core machine
	jvmPeerDir      = "../compat_test/peer"       // the Maven project, relative to this package
	jvmJarName      = "interlock-peer-4.7.0.jar"  // what mvn package writes into target/
	jvmBuildLock    = "target/.build.lock"        // compat_test's build lock, shared with it
	jvmBuildVersion = "-Dredisson.version=" + jvmVersion
)

// jvmReq is one request: the peer's JSON command. Thread is the logical
// thread (one dedicated Java thread each); Wait and Lease go as whole
// milliseconds; Permits, a semaphore op's count, goes when it is not 0.
type jvmReq struct {
	Thread      int
	Op, Kind    string
	Name        string
	Wait, Lease time.Duration
	Permits     int
	Extra       map[string]any // further fields of the command, as the op reads them
}

// jvmReply is the peer's answer; Err is "<Exception>: <message>..." when OK
// is false.
type jvmReply struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Err    string          `json:"error"`
	ID     *int64          `json:"id"`
	Ready  bool            `json:"ready"`
	Client string          `json:"clientId"`
	Vers   string          `json:"redisson"`
}

// jvmPeer is a running peer process. Do is safe for concurrent use.
type jvmPeer struct {
	cmd    *exec.Cmd
	stderr *lockedBuffer

	writeMu sync.Mutex
	stdin   io.WriteCloser

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan jvmReply
	exitErr error

	clientID string
	done     chan struct{} // closed once the reader saw EOF and reaped the process
}

// lockedBuffer is a bytes.Buffer safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startJVMPeer starts the Redisson peer with the server arguments args
// ("--redis", "redis://host:port", "--cluster", "host:port,...", or
// "--sentinel", "host:port,...", "--master-name", name, and the peer's
// other flags) and waits until it is ready; t.Cleanup stops it (quit, then kill). Without
// java on PATH it skips t, or fails it under CI=true.
func startJVMPeer(t *testing.T, args []string) *jvmPeer {
	t.Helper()
	if _, err := exec.LookPath("java"); err != nil {
		if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
			t.Fatal("T24 needs java: ", err)
		}
		t.Skip("T24 needs java: ", err)
	}
	jar, err := jvmJar()
	if err != nil {
		t.Fatalf("the Redisson %s peer: %v", jvmVersion, err)
	}
	p := &jvmPeer{
		cmd:     exec.Command("java", append(append(strings.Fields(jvmFlags), "-jar", jar), args...)...),
		stderr:  &lockedBuffer{},
		pending: map[int64]chan jvmReply{},
		done:    make(chan struct{}),
	}
	p.cmd.Stderr = p.stderr
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting the Redisson peer: %v", err)
	}
	ready := make(chan jvmReply, 1)
	go p.read(stdout, ready)
	t.Cleanup(func() { p.stop(t) })
	select {
	case r := <-ready:
		if !r.Ready || r.Client == "" || r.Vers != jvmVersion {
			t.Fatalf("Redisson peer: bad ready line %+v", r)
		}
		p.clientID = r.Client
	case <-p.done:
		t.Fatalf("Redisson peer exited before it was ready (%v); stderr:\n%s", p.exitErr, p.stderr)
	case <-time.After(jvmReadyTimeout):
		t.Fatalf("Redisson peer not ready within %v; stderr:\n%s", jvmReadyTimeout, p.stderr)
	}
	return p
}

// jvmJar returns the peer jar, building it with mvn (under compat_test's
// build lock, with compat_test's command) unless it is newer than the pom
// and every source.
func jvmJar() (string, error) {
	dir, err := filepath.Abs(jvmPeerDir)
	if err != nil {
		return "", err
	}
	jar := filepath.Join(dir, "target", jvmJarName)
	if jvmJarFresh(dir, jar) {
		return jar, nil
	}
	if err := os.MkdirAll(filepath.Join(dir, "target"), 0o755); err != nil {
		return "", err
	}
	lf, err := os.OpenFile(filepath.Join(dir, jvmBuildLock), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lf.Close()
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX); err != nil {
		return "", err
	}
	defer func() { _ = unix.Flock(int(lf.Fd()), unix.LOCK_UN) }()
	if jvmJarFresh(dir, jar) {
		return jar, nil // another binary built it meanwhile
	}
	ctx, cancel := context.WithTimeout(context.Background(), jvmBuildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "mvn", "-q", "-B", "-f", filepath.Join(dir, "pom.xml"), jvmBuildVersion, "-DskipTests", "package")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	return jar, nil
}

// jvmJarFresh reports whether jar exists and is newer than the pom and
// every file under src.
func jvmJarFresh(dir, jar string) bool {
	ji, err := os.Stat(jar)
	if err != nil {
		return false
	}
	fresh := true
	note := func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		if !fi.IsDir() && !fi.ModTime().Before(ji.ModTime()) {
			fresh = false
		}
		return nil
	}
	if note(filepath.Join(dir, "pom.xml"), nil, nil) != nil || filepath.WalkDir(filepath.Join(dir, "src"), note) != nil {
		return false
	}
	return fresh
}

// Do sends req and waits for its reply, or for ctx. An error means no
// reply came (the peer is gone, or ctx ended); a Java exception is a reply
// with OK false.
func (p *jvmPeer) Do(ctx context.Context, req jvmReq) (jvmReply, error) {
	ch := make(chan jvmReply, 1)
	p.mu.Lock()
	if p.exitErr != nil {
		p.mu.Unlock()
		return jvmReply{}, p.exitErr
	}
	p.nextID++
	id := p.nextID
	p.pending[id] = ch
	p.mu.Unlock()
	cmd := map[string]any{
		"id": id, "thread": req.Thread, "op": req.Op, "kind": req.Kind, "name": req.Name,
		"waitMs": req.Wait.Milliseconds(), "leaseMs": req.Lease.Milliseconds(),
	}
	if req.Permits != 0 {
		cmd["permits"] = req.Permits
	}
	for k, v := range req.Extra {
		cmd[k] = v
	}
	line, _ := json.Marshal(cmd)
	p.writeMu.Lock()
	_, err := p.stdin.Write(append(line, '\n'))
	p.writeMu.Unlock()
	if err != nil {
		p.forget(id)
		return jvmReply{}, fmt.Errorf("sending %s: %w", req.Op, err)
	}
	select {
	case r := <-ch:
		if r.ID == nil {
			return r, errors.New(r.Err)
		}
		return r, nil
	case <-ctx.Done():
		p.forget(id)
		return jvmReply{}, fmt.Errorf("no reply to %s %s %s on thread %d: %w", req.Op, req.Kind, req.Name, req.Thread, ctx.Err())
	}
}

func (p *jvmPeer) forget(id int64) {
	p.mu.Lock()
	delete(p.pending, id)
	p.mu.Unlock()
}

// read routes reply lines to their requests until EOF, then reaps the
// process and answers whatever is pending with the exit error.
func (p *jvmPeer) read(stdout io.Reader, ready chan<- jvmReply) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	first := true
	for sc.Scan() {
		var r jvmReply
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			fmt.Fprintf(p.stderr, "[driver] unparsable line: %s\n", sc.Bytes())
			continue
		}
		if first {
			first = false
			ready <- r
			continue
		}
		if r.ID == nil {
			fmt.Fprintf(p.stderr, "[driver] reply without id: %s\n", sc.Bytes())
			continue
		}
		p.mu.Lock()
		ch, ok := p.pending[*r.ID]
		delete(p.pending, *r.ID)
		p.mu.Unlock()
		if ok {
			ch <- r
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	exit := fmt.Errorf("peer exited: %w", errors.Join(sc.Err(), p.cmd.Wait()))
	p.mu.Lock()
	p.exitErr = exit
	pending := p.pending
	p.pending = map[int64]chan jvmReply{}
	p.mu.Unlock()
	for _, ch := range pending {
		ch <- jvmReply{Err: exit.Error()}
	}
	close(p.done)
}

// stop asks the peer to quit and kills it if it has not exited within
// jvmStopTimeout; it returns once the reader goroutine ended.
func (p *jvmPeer) stop(t *testing.T) {
	select {
	case <-p.done:
	default:
		p.writeMu.Lock()
		_, _ = io.WriteString(p.stdin, `{"id":0,"op":"quit"}`+"\n")
		_ = p.stdin.Close()
		p.writeMu.Unlock()
		select {
		case <-p.done:
		case <-time.After(jvmStopTimeout):
			t.Logf("Redisson peer did not quit within %v; killing it", jvmStopTimeout)
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	if t.Failed() {
		t.Logf("Redisson peer (client %s) stderr:\n%s", p.clientID, p.stderr)
	}
}
