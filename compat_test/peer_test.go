package compat_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
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

// The Java peer: a real Redisson client in its own JVM (peer/, a small Maven
// project), driven by JSON lines over its stdin and stdout. The protocol is
// described in peer/src/main/java/interlock/peer/Peer.java; in short, every
// request names a logical thread, and each logical thread is one dedicated
// Java thread, so that Redisson's owner strings ("<client id>:<thread id>"),
// reentrancy and isHeldByCurrentThread behave as in a Java application.

// peerVersions are the Redisson versions the suite runs against.
var peerVersions = []string{"4.7.0", "3.52.0"}

const (
	peerReadyTimeout = 60 * time.Second // JVM start and Redisson connect
	peerDoTimeout    = 90 * time.Second // a synchronous request
	peerStopTimeout  = 15 * time.Second // quit to exit, before we kill
	peerBuildTimeout = 10 * time.Minute // mvn package, cold Maven repository included
	peerDir          = "peer"           // the Maven project, relative to this package
	// peerJVMFlags keep a peer small and quiet on a shared two-core
	// machine: a small heap and the serial collector; the client
	// compiler only (a peer lives for seconds, so the optimising
	// compiler's work at start-up is CPU that the other tests need and
	// that pays back in no test); and the JVM's own warnings on stderr,
	// where they cannot be taken for protocol lines. The dump of the
	// class-data archive (peerArchive) runs with the same flags, which
	// the archive must match.
	peerJVMFlags = "-Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xlog:disable -Xlog:all=warning:stderr"
)

// peerConfig is what peerOptions set.
type peerConfig struct {
	watchdog   time.Duration // 0: Redisson's default (30s)
	namePrefix string        // "": no NameMapper
	replicas   []string      // master/slave config: addrs[0] is the master
}

// peerOption configures startJavaPeer.
type peerOption func(*peerConfig)

// withPeerWatchdog sets the peer's lockWatchdogTimeout (Config.setLockWatchdogTimeout).
func withPeerWatchdog(d time.Duration) peerOption {
	return func(c *peerConfig) { c.watchdog = d }
}

// peerReq is one request to the peer. Thread is the logical thread it runs
// on; Op is one of lock, tryLock, tryLockNoWait, unlock, forceUnlock,
// isLocked, isHeldByThread, holdCount, remainTimeToLive, lockToken,
// tryLockToken, getToken, threadId, parkedIn (answered at once, off the
// logical threads: where Thread is blocked, see awaitParked); Kind is reentrant, fair, read, write,
// fenced, nonReentrant or nonReentrantFair (the last two Redisson 4.4 and
// later), spin, or a multi-lock: multi (getMultiLock) or redLock
// (getRedLock) with Name a comma-separated list of member names in order,
// and "multi:K1,K2,..." giving member i the kind Ki. Wait and Lease are
// sent in whole milliseconds; a Lease of 0 means the watchdog, as in
// Redisson.
//
// The kinds semaphore (RSemaphore), expirable (RPermitExpirableSemaphore)
// and latch (RCountDownLatch) take these ops (replies in parentheses; "ids"
// is a JSON array of 32-hex permit ids, empty when nothing was acquired):
//
//	semaphore: trySetPermits Permits [TTL] (bool), addPermits Permits (null),
//	  acquire Permits (null), tryAcquire Permits Wait (bool),
//	  release Permits (null), releaseIfExists Permits (bool; Redisson 4.x only,
//	  else "UnsupportedOperationException: ..."), availablePermits (int),
//	  drainPermits (int), delete (bool), remainTimeToLive (ms, -1, -2)
//	expirable: trySetPermits Permits (bool), setPermits Permits (null),
//	  addPermits Permits (null), acquire Permits Lease (ids),
//	  tryAcquire Permits Wait Lease (ids), release IDs (null),
//	  releaseOne IDs[0] (null), tryRelease IDs (int), tryReleaseOne IDs[0]
//	  (bool), updateLeaseTime IDs[0] Lease (bool), getLeaseTime IDs[0] (ms or
//	  -1), availablePermits, getPermits, acquiredPermits (int), delete (bool),
//	  remainTimeToLive
//	latch: trySetCount Count (bool), countDown (null), getCount (int),
//	  await Wait (bool; with Wait peerForever the untimed await(): null), delete (bool)
//
// Permits and Count are sent as given, 0 included. Wait peerNoWait selects
// the no-wait tryAcquire(permits) (for expirable: only with no lease). For
// expirable, a Lease of 0 or peerNoLease means no lease (Redisson's -1);
// other values are passed as is. A TTL of 0 selects trySetPermits(p), any
// other trySetPermits(p, ttl). The *One ops and updateLeaseTime and
// getLeaseTime need exactly one id; release and tryRelease always use the
// list forms.
type peerReq struct {
	Thread      int
	Op          string
	Kind        string
	Name        string
	Wait, Lease time.Duration
	Permits     int
	Count       int64
	IDs         []string // hex permit ids
	TTL         time.Duration
	RL          peerRateArgs // kind ratelimit (interop_ratelimit_test.go)
}

// Special Wait and Lease values of the semaphore and latch ops (-1 ms on the
// wire, as in Redisson).
const (
	peerNoWait  = -time.Millisecond // tryAcquire: the no-wait form
	peerForever = -time.Millisecond // latch await: the untimed await()
	peerNoLease = -time.Millisecond // expirable: a permit with no lease
)

// peerReply is the peer's answer. When OK is false, Err is
// "<ExceptionSimpleName>: <message>" from Java, then "; caused by
// <ExceptionSimpleName>: <message>" for each cause; or, when the peer could
// not answer (it exited, or the request could not be sent), "peer: ...".
// ThreadID is the Java thread's id; Elapsed how long the call took in Java.
type peerReply struct {
	OK       bool
	Result   json.RawMessage
	Err      string
	ThreadID int64
	Elapsed  time.Duration
}

// Bool returns the result as a bool, failing t if the call failed or the
// result is not a bool.
func (r peerReply) Bool(t *testing.T) bool {
	t.Helper()
	r.mustOK(t)
	var b bool
	if err := json.Unmarshal(r.Result, &b); err != nil || string(r.Result) == "null" {
		t.Fatalf("peer result %s is not a bool", r.Result)
	}
	return b
}

// Int returns the result as an integer, failing t if the call failed or the
// result is not an integer (null included).
func (r peerReply) Int(t *testing.T) int64 {
	t.Helper()
	r.mustOK(t)
	var n int64
	if err := json.Unmarshal(r.Result, &n); err != nil || string(r.Result) == "null" {
		t.Fatalf("peer result %s is not an integer", r.Result)
	}
	return n
}

// IDs returns the result as a list of permit ids (hex), failing t if the
// call failed or the result is not a list of strings (null included).
func (r peerReply) IDs(t *testing.T) []string {
	t.Helper()
	r.mustOK(t)
	var ids []string
	if err := json.Unmarshal(r.Result, &ids); err != nil || string(r.Result) == "null" {
		t.Fatalf("peer result %s is not a list of ids", r.Result)
	}
	return ids
}

// Void fails t unless the call succeeded with a null result.
func (r peerReply) Void(t *testing.T) {
	t.Helper()
	r.mustOK(t)
	if string(r.Result) != "null" {
		t.Fatalf("peer result %s is not null", r.Result)
	}
}

// peerPermitRaw returns the 16 raw bytes that Redis stores for the hex
// permit id, failing t if id is not 32 hex characters.
func peerPermitRaw(t *testing.T, id string) string {
	t.Helper()
	b, err := hex.DecodeString(id)
	if err != nil || len(b) != 16 {
		t.Fatalf("permit id %q is not 32 hex characters", id)
	}
	return string(b)
}

func (r peerReply) mustOK(t *testing.T) {
	t.Helper()
	if !r.OK {
		t.Fatalf("peer call failed: %s", r.Err)
	}
}

// peerWireReq and peerWireReply are the JSON lines.
type peerWireReq struct {
	ID      int64    `json:"id"`
	Thread  int      `json:"thread"`
	Op      string   `json:"op"`
	Kind    string   `json:"kind,omitempty"`
	Name    string   `json:"name,omitempty"`
	WaitMs  int64    `json:"waitMs"`
	LeaseMs int64    `json:"leaseMs"`
	Permits int      `json:"permits,omitempty"`
	Count   int64    `json:"count,omitempty"`
	IDs     []string `json:"ids,omitempty"`
	TTLMs   int64    `json:"ttlMs,omitempty"`
	peerRateArgs
}

type peerWireReply struct {
	Ready     bool            `json:"ready"`
	ClientID  string          `json:"clientId"`
	Redisson  string          `json:"redisson"`
	ID        *int64          `json:"id"`
	OK        bool            `json:"ok"`
	Result    json.RawMessage `json:"result"`
	Error     string          `json:"error"`
	ThreadID  *int64          `json:"threadId"`
	ElapsedMs float64         `json:"elapsedMs"`
}

// javaPeer is a running peer process.
type javaPeer struct {
	version  string
	clientID string
	cmd      *exec.Cmd
	stderr   *syncBuffer // the JVM's stderr, and protocol lines nobody waited for

	writeMu sync.Mutex
	stdin   io.WriteCloser

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan peerReply
	exitErr error // why the peer is gone; set before done closes
	owners  map[int]string

	ready chan peerWireReply // the first line
	done  chan struct{}      // closed when the reader has seen EOF and reaped the process
}

// startJavaPeer builds the peer jar for version if needed (once per test
// binary run, guarded), starts it against addrs (one address: single
// server; several: cluster), waits for ready, and stops it (quit, then
// kill) with t.Cleanup. Without java or mvn on PATH it skips, or fails when
// CI=true.
func startJavaPeer(t *testing.T, version string, addrs []string, opts ...peerOption) *javaPeer {
	t.Helper()
	var cfg peerConfig
	for _, o := range opts {
		o(&cfg)
	}
	if len(addrs) == 0 {
		t.Fatal("startJavaPeer: no Redis address")
	}
	requireJava(t)
	b, err := buildPeer(version)
	if err != nil {
		t.Fatalf("building the Redisson %s peer: %v", version, err)
	}
	if b.took > 0 {
		t.Logf("built the Redisson %s peer in %v", version, b.took.Round(time.Millisecond))
	}
	if b.archiveErr != nil {
		t.Logf("no class-data archive for the Redisson %s peer, its JVMs start without one: %v", version, b.archiveErr)
	}

	args := strings.Fields(peerJVMFlags)
	if b.archive != "" {
		args = append(args, "-XX:SharedArchiveFile="+b.archive)
	}
	args = append(args, "-jar", b.jar)
	if len(cfg.replicas) > 0 {
		args = append(args, "--master", addrs[0], "--replica", strings.Join(cfg.replicas, ","))
	} else if len(addrs) == 1 {
		args = append(args, "--redis", "redis://"+addrs[0])
	} else {
		args = append(args, "--cluster", strings.Join(addrs, ","))
	}
	if cfg.watchdog > 0 {
		args = append(args, "--watchdog-ms", strconv.FormatInt(cfg.watchdog.Milliseconds(), 10))
	}
	if cfg.namePrefix != "" {
		args = append(args, "--name-prefix", cfg.namePrefix)
	}
	p := &javaPeer{
		version: version,
		cmd:     exec.Command("java", args...),
		stderr:  &syncBuffer{},
		pending: make(map[int64]chan peerReply),
		owners:  make(map[int]string),
		ready:   make(chan peerWireReply, 1),
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
		t.Fatalf("starting the Redisson %s peer: %v", version, err)
	}
	go p.read(stdout)
	t.Cleanup(func() { p.stop(t) })

	select {
	case r := <-p.ready:
		if !r.Ready || r.ClientID == "" {
			t.Fatalf("Redisson %s peer: bad ready line %+v", version, r)
		}
		if r.Redisson != version {
			t.Fatalf("peer jar for %s runs Redisson %q", version, r.Redisson)
		}
		p.clientID = r.ClientID
	case <-p.done:
		t.Fatalf("Redisson %s peer exited before it was ready (%v); stderr:\n%s", version, p.exitErr, p.stderr)
	case <-time.After(peerReadyTimeout):
		t.Fatalf("Redisson %s peer not ready within %v; stderr:\n%s", version, peerReadyTimeout, p.stderr)
	}
	return p
}

// ClientID is the peer's RedissonClient.getId().
func (p *javaPeer) ClientID() string { return p.clientID }

// Version is the peer's Redisson version.
func (p *javaPeer) Version() string { return p.version }

// Do sends req and waits for its reply (for up to peerDoTimeout, then it
// fails t). Call it from the test's goroutine.
func (p *javaPeer) Do(t *testing.T, req peerReq) peerReply {
	t.Helper()
	select {
	case r := <-p.Start(t, req):
		return r
	case <-time.After(peerDoTimeout):
		t.Fatalf("Redisson %s peer: no reply to %s %s %q on thread %d within %v; stderr:\n%s",
			p.version, req.Op, req.Kind, req.Name, req.Thread, peerDoTimeout, p.stderr)
		return peerReply{}
	}
}

// Start sends req and returns a channel (buffered 1) that receives its reply.
// If the peer dies first, the reply says so (OK false, Err "peer: ...").
func (p *javaPeer) Start(t *testing.T, req peerReq) <-chan peerReply {
	t.Helper()
	ch := make(chan peerReply, 1)
	p.mu.Lock()
	if p.exitErr != nil {
		err := p.exitErr
		p.mu.Unlock()
		ch <- peerReply{Err: "peer: " + err.Error()}
		return ch
	}
	p.nextID++
	id := p.nextID
	p.pending[id] = ch
	p.mu.Unlock()

	line, err := json.Marshal(peerWireReq{
		ID: id, Thread: req.Thread, Op: req.Op, Kind: req.Kind, Name: req.Name,
		WaitMs: req.Wait.Milliseconds(), LeaseMs: req.Lease.Milliseconds(),
		Permits: req.Permits, Count: req.Count, IDs: req.IDs, TTLMs: req.TTL.Milliseconds(),
		peerRateArgs: req.RL,
	})
	if err == nil {
		err = p.send(line)
	}
	if err != nil {
		p.mu.Lock()
		_, still := p.pending[id]
		delete(p.pending, id)
		p.mu.Unlock()
		if still { // otherwise the reader has answered it already
			ch <- peerReply{Err: fmt.Sprintf("peer: sending %s: %v", req.Op, err)}
		}
	}
	return ch
}

// Owner returns "<clientId>:<java thread id of thread>", the hash field
// Redisson writes when that logical thread holds a lock.
func (p *javaPeer) Owner(t *testing.T, thread int) string {
	t.Helper()
	p.mu.Lock()
	o, ok := p.owners[thread]
	p.mu.Unlock()
	if ok {
		return o
	}
	id := p.Do(t, peerReq{Thread: thread, Op: "threadId"}).Int(t)
	o = p.clientID + ":" + strconv.FormatInt(id, 10)
	p.mu.Lock()
	p.owners[thread] = o
	p.mu.Unlock()
	return o
}

func (p *javaPeer) send(line []byte) error {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	_, err := p.stdin.Write(append(line, '\n'))
	return err
}

// read is the reader goroutine: it routes reply lines to their requests
// until EOF, then reaps the process and fails whatever is still pending.
func (p *javaPeer) read(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	first := true
	for sc.Scan() {
		var w peerWireReply
		if err := json.Unmarshal(sc.Bytes(), &w); err != nil {
			fmt.Fprintf(p.stderr, "[driver] unparsable stdout line: %s\n", sc.Bytes())
			continue
		}
		if first {
			first = false
			p.ready <- w
			continue
		}
		if w.ID == nil {
			fmt.Fprintf(p.stderr, "[driver] reply without id: %s\n", sc.Bytes())
			continue
		}
		p.mu.Lock()
		ch, ok := p.pending[*w.ID]
		delete(p.pending, *w.ID)
		p.mu.Unlock()
		if !ok {
			fmt.Fprintf(p.stderr, "[driver] reply nobody waits for: %s\n", sc.Bytes())
			continue
		}
		r := peerReply{
			OK:      w.OK,
			Result:  w.Result,
			Err:     w.Error,
			Elapsed: time.Duration(w.ElapsedMs * float64(time.Millisecond)),
		}
		if w.ThreadID != nil {
			r.ThreadID = *w.ThreadID
		}
		ch <- r
	}
	scanErr := sc.Err()
	_, _ = io.Copy(io.Discard, stdout) // after a scanner error, let the process finish writing
	waitErr := p.cmd.Wait()
	exit := errors.Join(scanErr, waitErr)
	if exit == nil {
		exit = errors.New("exited")
	} else {
		exit = fmt.Errorf("exited: %w", exit)
	}
	p.mu.Lock()
	p.exitErr = exit
	pending := p.pending
	p.pending = nil
	p.mu.Unlock()
	for _, ch := range pending {
		ch <- peerReply{Err: "peer: " + exit.Error()}
	}
	close(p.done)
}

// stop asks the peer to quit, closes its stdin, and kills it if it has not
// exited within peerStopTimeout; it returns once the reader goroutine has
// ended.
func (p *javaPeer) stop(t *testing.T) {
	select {
	case <-p.done:
	default:
		_ = p.send([]byte(`{"id":0,"op":"quit"}`))
		_ = p.stdin.Close()
		select {
		case <-p.done:
		case <-time.After(peerStopTimeout):
			t.Logf("Redisson %s peer did not quit within %v; killing it", p.version, peerStopTimeout)
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	_ = p.stdin.Close()
	if t.Failed() {
		t.Logf("Redisson %s peer (client %s) stderr:\n%s", p.version, p.clientID, p.stderr)
	}
}

// requireJava skips t, or fails it with CI=true, when java or mvn is not
// on PATH.
func requireJava(t *testing.T) {
	t.Helper()
	var missing []error
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, err)
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := "Java interop tests need java and mvn: " + errors.Join(missing...).Error()
	if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// Peer builds: one per version per test binary run, and across processes
// (two test binaries sharing this tree) serialised by a lock file, so that
// no one runs a half-written jar.
var peerBuilds struct {
	sync.Mutex
	done map[string]peerBuild
	errs map[string]error
}

// peerBuild is a built peer: its jar, and the class-data archive its JVMs
// start from ("" if there is none, archiveErr saying why).
type peerBuild struct {
	jar        string
	archive    string
	archiveErr error
	took       time.Duration // how long the build took (0 when there was none)
}

// buildPeer returns the peer jar for version, running mvn package first
// unless the jar is newer than the pom and every source, and its
// class-data archive, dumping it first unless it is newer than the jar.
// Only the first call per version in a test binary reports took and
// archiveErr.
func buildPeer(version string) (peerBuild, error) {
	peerBuilds.Lock()
	defer peerBuilds.Unlock()
	if b, ok := peerBuilds.done[version]; ok {
		b.took, b.archiveErr = 0, nil
		return b, nil
	}
	if err, ok := peerBuilds.errs[version]; ok {
		return peerBuild{}, err
	}
	b, err := buildPeerLocked(version)
	if peerBuilds.done == nil {
		peerBuilds.done, peerBuilds.errs = make(map[string]peerBuild), make(map[string]error)
	}
	if err != nil {
		peerBuilds.errs[version] = err
		return peerBuild{}, err
	}
	peerBuilds.done[version] = b
	return b, nil
}

func buildPeerLocked(version string) (b peerBuild, err error) {
	dir, err := filepath.Abs(peerDir)
	if err != nil {
		return b, err
	}
	target := filepath.Join(dir, "target")
	if err := os.MkdirAll(target, 0o755); err != nil {
		return b, err
	}
	lf, err := os.OpenFile(filepath.Join(target, ".build.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return b, err
	}
	defer lf.Close()
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX); err != nil {
		return b, fmt.Errorf("locking %s: %w", lf.Name(), err)
	}
	defer func() { _ = unix.Flock(int(lf.Fd()), unix.LOCK_UN) }()

	b.jar = filepath.Join(target, "interlock-peer-"+version+".jar")
	fresh, err := jarFresh(dir, b.jar)
	if err != nil {
		return b, err
	}
	if !fresh {
		ctx, cancel := context.WithTimeout(context.Background(), peerBuildTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, "mvn", "-q", "-B", "-f", filepath.Join(dir, "pom.xml"),
			"-Dredisson.version="+version, "-DskipTests", "package")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return b, fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args, " "), err, out.String())
		}
		if _, err := os.Stat(b.jar); err != nil {
			return b, fmt.Errorf("mvn package succeeded but %w", err)
		}
		b.took = time.Since(start)
	}
	b.archive, b.archiveErr = peerArchive(b.jar)
	return b, nil
}

// peerArchive returns the class-data archive (AppCDS) of jar, dumping it
// first if it is missing or older than the jar. A peer JVM that starts
// from it loads Redisson, Netty and the JDK classes they use from the
// archive instead of parsing and verifying them: about a third of the
// start-up CPU, which dozens of peers per run spend on a shared two-core
// machine. The dump runs a peer once against the shared standalone server
// through the common requests, and writes the archive at its exit. An
// archive the JVM cannot use (another JDK, another jar) is ignored by the
// JVM, with a warning on stderr; a failed dump leaves the peers without one.
func peerArchive(jar string) (string, error) {
	archive := strings.TrimSuffix(jar, ".jar") + ".jsa"
	if ai, err := os.Stat(archive); err == nil {
		if ji, err := os.Stat(jar); err == nil && ai.ModTime().After(ji.ModTime()) {
			return archive, nil
		}
	}
	tmp := fmt.Sprintf("%s.%d.tmp", archive, os.Getpid())
	_ = os.Remove(tmp)
	if err := dumpPeerArchive(jar, tmp); err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	if err := os.Rename(tmp, archive); err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	return archive, nil
}

// dumpPeerArchive runs the peer jar with -XX:ArchiveClassesAtExit=out,
// one request at a time, and waits for it to exit.
func dumpPeerArchive(jar, out string) error {
	ctx, cancel := context.WithTimeout(context.Background(), peerReadyTimeout+peerStopTimeout)
	defer cancel()
	args := append(strings.Fields(peerJVMFlags), "-XX:ArchiveClassesAtExit="+out, "-jar", jar, "--redis", "redis://"+standaloneAddr)
	cmd := exec.CommandContext(ctx, "java", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	// next reads stdout up to the line that answers id (the ready line
	// for 0), skipping anything else.
	next := func(id int64) error {
		for sc.Scan() {
			var w peerWireReply
			if json.Unmarshal(sc.Bytes(), &w) != nil {
				continue
			}
			if (id == 0 && w.Ready) || (w.ID != nil && *w.ID == id) {
				return nil
			}
		}
		return fmt.Errorf("the peer's stdout ended (%v)", sc.Err())
	}
	name := unique("peer-archive")
	reqs := []peerWireReq{
		{Thread: 1, Op: "threadId"},
		{Thread: 1, Op: "lock", Kind: "reentrant", Name: name},
		{Thread: 2, Op: "tryLock", Kind: "reentrant", Name: name, WaitMs: 50},
		{Thread: 1, Op: "unlock", Kind: "reentrant", Name: name},
		{Thread: 1, Op: "lock", Kind: "fair", Name: name + ":fair"},
		{Thread: 1, Op: "unlock", Kind: "fair", Name: name + ":fair"},
		{Thread: 1, Op: "trySetPermits", Kind: "semaphore", Name: name + ":sem", Permits: 1},
		{Thread: 1, Op: "tryAcquire", Kind: "semaphore", Name: name + ":sem", Permits: 1, WaitMs: -1},
		{Thread: 1, Op: "release", Kind: "semaphore", Name: name + ":sem", Permits: 1},
		{Thread: 1, Op: "delete", Kind: "semaphore", Name: name + ":sem"},
	}
	err = next(0)
	for i := range reqs {
		if err != nil {
			break
		}
		reqs[i].ID = int64(i + 1)
		line, _ := json.Marshal(reqs[i])
		if _, err = stdin.Write(append(line, '\n')); err == nil {
			err = next(reqs[i].ID)
		}
	}
	if err == nil {
		_, err = stdin.Write([]byte(`{"id":0,"op":"quit"}` + "\n"))
	}
	_ = stdin.Close()
	_, _ = io.Copy(io.Discard, stdout)
	if werr := cmd.Wait(); err == nil {
		err = werr
	}
	if err == nil {
		_, err = os.Stat(out)
	}
	if err != nil {
		return fmt.Errorf("dumping %s: %w; stderr:\n%s", out, err, stderr.String())
	}
	return nil
}

// jarFresh reports whether jar exists and is newer than the pom and every
// file under src.
func jarFresh(dir, jar string) (bool, error) {
	ji, err := os.Stat(jar)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	newest := time.Time{}
	note := func(path string) error {
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		if fi.ModTime().After(newest) {
			newest = fi.ModTime()
		}
		return nil
	}
	if err := note(filepath.Join(dir, "pom.xml")); err != nil {
		return false, err
	}
	err = filepath.WalkDir(filepath.Join(dir, "src"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		return note(path)
	})
	if err != nil {
		return false, err
	}
	return ji.ModTime().After(newest), nil
}

// TestPeerDriver checks the driver and the peer's protocol itself: logical
// threads are distinct, stable Java threads; errors come back as replies.
func TestPeerDriver(t *testing.T) {
	t.Parallel()
	for _, v := range peerVersions {
		t.Run("redisson-"+v, func(t *testing.T) {
			parallel(t)
			p := startJavaPeer(t, v, []string{standaloneAddr})
			if !ownerRE.MatchString(p.ClientID() + ":1") {
				t.Fatalf("client id %q is not a UUID v4", p.ClientID())
			}
			if p.Version() != v {
				t.Fatalf("Version() = %q", p.Version())
			}
			o1, o2 := p.Owner(t, 1), p.Owner(t, 2)
			if o1 == o2 {
				t.Fatalf("threads 1 and 2 have the same owner %q", o1)
			}
			r := p.Do(t, peerReq{Thread: 1, Op: "threadId"})
			if got := p.ClientID() + ":" + strconv.FormatInt(r.Int(t), 10); got != o1 || r.ThreadID != r.Int(t) {
				t.Fatalf("thread 1 moved: owner %q then %q (reply thread %d)", o1, got, r.ThreadID)
			}

			name := unique("peer-driver")
			r = p.Do(t, peerReq{Thread: 1, Op: "unlock", Kind: "reentrant", Name: name})
			if r.OK || !strings.HasPrefix(r.Err, "IllegalMonitorStateException: ") {
				t.Fatalf("unlock of a free lock: %+v", r)
			}
			for _, bad := range []peerReq{
				{Thread: 1, Op: "nonsense", Kind: "reentrant", Name: name},
				{Thread: 1, Op: "lock", Kind: "nonsense", Name: name},
				{Thread: 1, Op: "getToken", Kind: "reentrant", Name: name},
			} {
				if r := p.Do(t, bad); r.OK || !strings.HasPrefix(r.Err, "IllegalArgumentException: ") {
					t.Fatalf("%+v: %+v", bad, r)
				}
			}
			// A reply to a blocked call comes after later ones on other threads.
			if !p.Do(t, peerReq{Thread: 1, Op: "tryLockNoWait", Kind: "reentrant", Name: name}).Bool(t) {
				t.Fatal("tryLock() on a free lock failed")
			}
			blocked := p.Start(t, peerReq{Thread: 2, Op: "tryLock", Kind: "reentrant", Name: name, Wait: 20 * time.Second})
			if p.Do(t, peerReq{Thread: 3, Op: "isLocked", Kind: "reentrant", Name: name}).Bool(t) != true {
				t.Fatal("isLocked false while held")
			}
			if r := p.Do(t, peerReq{Thread: 1, Op: "unlock", Kind: "reentrant", Name: name}); !r.OK {
				t.Fatalf("unlock: %s", r.Err)
			}
			if r := <-blocked; !r.Bool(t) || r.ThreadID != mustThread(t, o2) {
				t.Fatalf("thread 2's tryLock: %+v", r)
			}
			if r := p.Do(t, peerReq{Thread: 2, Op: "unlock", Kind: "reentrant", Name: name}); !r.OK {
				t.Fatalf("unlock: %s", r.Err)
			}
			start := time.Now()
			p.stop(t)
			t.Logf("Redisson %s peer quit in %v", v, time.Since(start).Round(time.Millisecond))
			if r := <-p.Start(t, peerReq{Thread: 1, Op: "threadId"}); r.OK || !strings.HasPrefix(r.Err, "peer: ") {
				t.Fatalf("request after quit: %+v", r)
			}
			if p.exitErr.Error() != "exited" {
				t.Fatalf("peer exit: %v; stderr:\n%s", p.exitErr, p.stderr)
			}
		})
	}
}

// mustThread returns the Java thread id of an owner string.
func mustThread(t *testing.T, owner string) int64 {
	t.Helper()
	id, err := strconv.ParseInt(owner[strings.LastIndexByte(owner, ':')+1:], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
