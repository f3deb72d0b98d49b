package interlockotel_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// redisAddr is the server every test of the package shares: REDIS_ADDR
// when set, else a redis-server started from PATH on a free loopback port
// (the main module's test harness is not importable from this module).
// Tests use unique key names.
var redisAddr string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	redisAddr = strings.TrimSpace(os.Getenv("REDIS_ADDR"))
	if redisAddr == "" {
		stop, addr, err := startRedis()
		if err != nil {
			fmt.Fprintln(os.Stderr, "interlockotel tests:", err)
			if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
				return 1
			}
			fmt.Fprintln(os.Stderr, "interlockotel tests: skipped (no redis-server; set REDIS_ADDR or install it)")
			return 0
		}
		defer stop()
		redisAddr = addr
	}
	return m.Run()
}

func startRedis() (stop func(), addr string, err error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, "", err
	}
	dir, err := os.MkdirTemp("", "interlockotel-redis-")
	if err != nil {
		return nil, "", err
	}
	for range 5 { // a free port may be taken before the server binds it
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, "", err
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		addr = "127.0.0.1:" + strconv.Itoa(port)
		cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir, "--logfile", "redis.log")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			return nil, "", err
		}
		stop = func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			_ = os.RemoveAll(dir)
		}
		if ping(addr, 10*time.Second) == nil {
			return stop, addr, nil
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	_ = os.RemoveAll(dir)
	return nil, "", fmt.Errorf("redis-server did not start")
}

func ping(addr string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
		if err == nil {
			err = rc.Do(context.Background(), rc.B().Ping().Build()).Error()
			rc.Close()
			if err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// newRC returns a rueidis client on the shared server, closed at the end
// of the test.
func newRC(t testing.TB) rueidis.Client {
	t.Helper()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{redisAddr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close)
	return rc
}
