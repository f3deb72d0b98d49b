package redistest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

var (
	// ErrUnavailable is wrapped by the errors returned when a Redis binary the
	// harness needs is not installed. Tests skip on it, except in CI.
	ErrUnavailable = errors.New("redistest: unavailable")

	// ErrExternal is wrapped by the errors returned when an operation needs a
	// redis-server process started by this harness, but REDIS_ADDR points at
	// an external server. Tests always skip on it.
	ErrExternal = errors.New("redistest: needs a redis-server this harness started, but REDIS_ADDR is set")
)

// EnvAddr names the environment variable that points the standalone helpers
// at an existing server ("host:port") instead of starting one.
const EnvAddr = "REDIS_ADDR"

// externalAddr returns the address in REDIS_ADDR, or "".
func externalAddr() string {
	return strings.TrimSpace(os.Getenv(EnvAddr))
}

// inCI reports whether the environment variable CI is true, as CI services
// set it. Missing Redis then fails the tests instead of skipping them.
func inCI() bool {
	ci, _ := strconv.ParseBool(os.Getenv("CI"))
	return ci
}

// lookBinary finds a Redis binary on PATH.
func lookBinary(name string) (string, error) {
	path, err := exec.LookPath(name)
	if err == nil {
		return path, nil
	}
	if name == "redis-cli" {
		return "", fmt.Errorf("%w: redis-cli not found on PATH; cluster tests need it (it comes with redis-server or redis-tools)", ErrUnavailable)
	}
	return "", fmt.Errorf("%w: %s not found on PATH; install redis-server or set %s", ErrUnavailable, name, EnvAddr)
}

// SkipOrFail ends tb according to err, which comes from one of the Start
// functions: nothing happens for nil; ErrExternal skips; ErrUnavailable skips,
// or fails when CI=true; any other error fails.
func SkipOrFail(tb testing.TB, err error) {
	tb.Helper()
	switch {
	case err == nil:
	case errors.Is(err, ErrExternal):
		tb.Skip(err.Error())
	case errors.Is(err, ErrUnavailable) && !inCI():
		tb.Skip(err.Error())
	default:
		tb.Fatal(err.Error())
	}
}

// RequireProcess skips tb unless the harness can start (and so kill, pause and
// restart) its own redis-server: it skips when REDIS_ADDR is set, and when
// redis-server is missing it skips or, with CI=true, fails.
func RequireProcess(tb testing.TB) {
	tb.Helper()
	if addr := externalAddr(); addr != "" {
		tb.Skipf("%v (%s=%s)", ErrExternal, EnvAddr, addr)
	}
	_, err := lookBinary("redis-server")
	SkipOrFail(tb, err)
}

// rueidisDelayed lists the rueidis functions that run in goroutines which
// outlive Client.Close by up to five seconds: they close replaced connections
// after a delay, or refresh the cluster topology after a random delay. The
// first is started even in a healthy cluster, when the connections that
// rueidis.NewClient dials to its extra InitAddress entries race with its first
// topology refresh.
var rueidisDelayed = []string{
	"github.com/redis/rueidis.(*clusterClient)._refresh.func2",
	"github.com/redis/rueidis.(*clusterClient).redirectOrNew.func1",
	"github.com/redis/rueidis.(*standalone).redirectToPrimary.func1",
	"github.com/redis/rueidis.(*call).DelayDo.func1",
}

// GoleakOptions returns the goleak options that Main uses. They ignore the
// goroutines rueidis leaves behind for a few seconds after Client.Close (to
// close replaced connections late, or to refresh the cluster topology), which
// are not leaks, and the reader of the Docker helper, which lives as long as
// the test process. Packages that call goleak.VerifyTestMain or
// goleak.VerifyNone themselves should pass them too.
func GoleakOptions() []goleak.Option {
	opts := make([]goleak.Option, 0, len(rueidisDelayed)+1)
	for _, fn := range rueidisDelayed {
		opts = append(opts, goleak.IgnoreAnyFunction(fn))
	}
	return append(opts, goleak.IgnoreAnyFunction("github.com/interlock-go/interlock/internal/redistest.(*dockerHelper).read"))
}

// Main is a complete TestMain for a package that shares servers between its
// tests; it does not return. It calls setup, runs the tests, calls the
// teardown that setup returned, stops the cluster SharedCluster and the
// endpoint SharedSlotted started,
// checks for leaked goroutines with goleak (passing GoleakOptions and
// opts), and exits.
//
// If setup fails with ErrUnavailable or ErrExternal, Main prints the reason
// and exits 0 without running any test; with CI=true it exits 1 instead,
// as it does for any other error. Setup may return a teardown together with an
// error to release what it started before failing. A nil setup only runs the
// tests and the leak check.
func Main(m *testing.M, setup func() (teardown func(), err error), opts ...goleak.Option) {
	os.Exit(runMain(m, setup, opts))
}

// runMain is Main without the exit.
func runMain(m *testing.M, setup func() (func(), error), opts []goleak.Option) int {
	var teardown func()
	if setup != nil {
		var err error
		teardown, err = setup()
		if err != nil {
			if teardown != nil {
				teardown()
			}
			skip := errors.Is(err, ErrExternal) || (errors.Is(err, ErrUnavailable) && !inCI())
			if skip {
				fmt.Fprintf(os.Stderr, "SKIP: every test of this package: %v\n", err)
				return 0
			}
			fmt.Fprintf(os.Stderr, "FAIL: starting Redis for this package: %v\n", err)
			return 1
		}
	}
	code := m.Run()
	if teardown != nil {
		teardown()
	}
	stopShared()
	stopSharedSlotted()
	if code == 0 {
		if err := goleak.Find(append(GoleakOptions(), opts...)...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: Errors on successful test run: %v\n", err)
			code = 1
		}
	}
	return code
}

// EnvImage names the environment variable that moves the Start functions
// onto the container backend: set to an Image's Name ("valkey-8.1.1"),
// Start, StartCluster, StartReplicas, StartSentinel and StartSentinels
// (and the helpers built on them) start that image instead of redis-server
// processes. scripts/matrix runs
// the suites once per image this way.
const EnvImage = "INTERLOCK_TEST_IMAGE"

// envImage returns the image EnvImage names, if it is set.
func envImage() (Image, bool, error) {
	name := strings.TrimSpace(os.Getenv(EnvImage))
	if name == "" {
		return Image{}, false, nil
	}
	for _, img := range Images() {
		if img.Name() == name {
			return img, true, nil
		}
	}
	var names []string
	for _, img := range Images() {
		names = append(names, img.Name())
	}
	return Image{}, true, fmt.Errorf("redistest: %s=%q names no image; want one of %s", EnvImage, name, strings.Join(names, ", "))
}

// announce prints which server a Start function started from EnvImage, so
// that every run of the matrix shows the versions it tested.
func announce(what string, s *Server) {
	if c := s.Container(); c != nil {
		fmt.Fprintf(os.Stderr, "redistest: %s on %s %s (%s) at %s\n", what, c.Image().Server, c.Version(), c.Image().Ref, s.Addr())
	}
}
