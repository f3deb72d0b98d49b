package reliability

// Helpers of T13, T14, T16, T17, T18 and T25 (the nh prefix keeps them
// apart from the other tests' helpers).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/redisproc"
	"github.com/interlock-go/interlock/internal/redistest"
)

// nhFaketimeLib is libfaketime's preload library (scripts/ensure-faketime
// installs it).
const nhFaketimeLib = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"

// nhMallocDebugLib is glibc's malloc wrapper. Debian's redis-server takes
// its malloc from a shared libjemalloc, whose lazy initialisation calls
// clock_gettime while libfaketime is still initialising itself: the server
// deadlocks before it listens ("Unexpected recursive calls to
// clock_gettime()"). Preloaded ahead of libfaketime, this library gives
// malloc and free to glibc, so the first allocation no longer reaches
// jemalloc; the server still reports jemalloc, which it uses only for its
// statistics then.
const nhMallocDebugLib = "/lib/x86_64-linux-gnu/libc_malloc_debug.so.0"

// nhFakeClockServer is a redis-server whose wall clock the test moves:
// libfaketime reads the offset from a file on every call
// (FAKETIME_NO_CACHE), and leaves CLOCK_MONOTONIC alone
// (FAKETIME_DONT_FAKE_MONOTONIC), so only the wall clock jumps, and with it
// every key's expiry.
type nhFakeClockServer struct {
	srv    *redisproc.Server
	file   string
	mu     sync.Mutex
	offset time.Duration
}

// nhStartFakeClock starts a server under libfaketime for t, stopped by
// t.Cleanup. It skips (fails in CI) when libfaketime or redis-server is
// missing.
func nhStartFakeClock(t *testing.T) *nhFakeClockServer {
	t.Helper()
	redistest.RequireProcess(t)
	for _, lib := range []string{nhFaketimeLib, nhMallocDebugLib} {
		if _, err := os.Stat(lib); err != nil {
			redistest.SkipOrFail(t, fmt.Errorf("%s is missing (run scripts/ensure-faketime): %w", lib, err))
		}
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		redistest.SkipOrFail(t, err)
	}
	dir := t.TempDir()
	s := &nhFakeClockServer{file: filepath.Join(dir, "faketime")}
	if err := s.write(0); err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(dir, "redis-server-faketime")
	script := "#!/bin/sh\n" +
		"LD_PRELOAD='" + nhMallocDebugLib + " " + nhFaketimeLib + "'\n" +
		"FAKETIME_TIMESTAMP_FILE='" + s.file + "'\n" +
		"FAKETIME_NO_CACHE=1\nFAKETIME_DONT_FAKE_MONOTONIC=1\n" +
		"export LD_PRELOAD FAKETIME_TIMESTAMP_FILE FAKETIME_NO_CACHE FAKETIME_DONT_FAKE_MONOTONIC\n" +
		"exec '" + bin + "' \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s.srv, err = redisproc.Start(ctx, redisproc.Config{Bin: wrapper, DirPattern: "redis-faketime-"})
	if err != nil {
		t.Fatalf("redis-server under libfaketime: %v", err)
	}
	t.Cleanup(s.srv.Stop)
	return s
}

// Addr is the server's address.
func (s *nhFakeClockServer) Addr() string { return s.srv.Addr() }

// write replaces the offset file atomically, so the server never reads a
// half-written one.
func (s *nhFakeClockServer) write(offset time.Duration) error {
	tmp := s.file + ".tmp"
	spec := fmt.Sprintf("%+d\n", int64(offset/time.Second))
	if err := os.WriteFile(tmp, []byte(spec), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, s.file)
}

// Jump moves the server's wall clock d (whole seconds) further ahead and
// returns when the file is in place: the server's next clock reading sees it.
func (s *nhFakeClockServer) Jump(d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.write(s.offset + d); err != nil {
		return err
	}
	s.offset += d
	return nil
}

// nhQuantile returns the q-quantile (0..1) of ds, which it sorts.
func nhQuantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(q * float64(len(ds)-1))
	return ds[i]
}

// nhSummary formats min, p50, p99 and max of ds.
func nhSummary(ds []time.Duration) string {
	if len(ds) == 0 {
		return "no samples"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	r := func(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
	return fmt.Sprintf("n=%d min %v p50 %v p99 %v max %v", len(s), r(s[0]), r(nhQuantile(s, 0.5)),
		r(nhQuantile(s, 0.99)), r(s[len(s)-1]))
}

// nhRSS returns this process's resident set size in bytes.
func nhRSS() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS in /proc/self/status")
}

// nhRedisErrPrefix returns the first word of a Redis error reply in err's
// chain ("CROSSSLOT", "NOSCRIPT", "MOVED", …), or "" when there is none.
func nhRedisErrPrefix(err error) string {
	var re *rueidis.RedisError
	if !errors.As(err, &re) {
		return ""
	}
	word, _, _ := strings.Cut(re.Error(), " ")
	return word
}

// nhTimedClient is a rueidis.Client that times every DoMulti of more than
// one EVALSHA or EVAL (the renewal ticks; acquisitions and unlocks are
// single scripts, or a script and a WAIT).
type nhTimedClient struct {
	rueidis.Client
	mu     sync.Mutex
	cycles []time.Duration
	sizes  []int
}

// DoMulti runs the commands and records how long a renewal batch took.
func (c *nhTimedClient) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	scripts := 0
	for _, cmd := range multi {
		if cs := cmd.Commands(); len(cs) > 0 && (cs[0] == "EVALSHA" || cs[0] == "EVAL") {
			scripts++
		}
	}
	start := time.Now()
	res := c.Client.DoMulti(ctx, multi...)
	if scripts > 1 {
		d := time.Since(start)
		c.mu.Lock()
		c.cycles = append(c.cycles, d)
		c.sizes = append(c.sizes, scripts)
		c.mu.Unlock()
	}
	return res
}

// Count returns how many batches were recorded since the last Cycles.
func (c *nhTimedClient) Count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.cycles)
}

// Cycles returns the batches recorded since the last call, and their sizes
// in script calls.
func (c *nhTimedClient) Cycles() ([]time.Duration, []int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, s := c.cycles, c.sizes
	c.cycles, c.sizes = nil, nil
	return d, s
}

// Dedicate dedicates a connection whose renewal rounds and latch sweeps
// go through nhTimedClient's DoMulti (redistest.Aside).
func (c *nhTimedClient) Dedicate() (rueidis.DedicatedClient, func()) {
	dc, release := c.Client.Dedicate()
	return redistest.Aside(dc, c.DoMulti), release
}
