// Package redistest starts real redis-server processes for tests: a standalone
// server, a three-master cluster, a master with one replica, and the same
// monitored by a Redis Sentinel.
//
// Every server listens on a free port of 127.0.0.1 only, keeps no data on disk
// (--save "" --appendonly no) and runs in its own temporary directory, which
// also holds its log file (redis.log). When a server fails to start, the
// returned error ends with the last lines of that log.
//
// # Per-test servers
//
// The functions that take a testing.TB (Standalone, Cluster, Replicated,
// Sentinel) start servers for one test and stop them with t.Cleanup, even when
// the test fails. They must be called from the test's own goroutine, because
// they may call t.Skip or t.Fatal.
//
//	func TestSomething(t *testing.T) {
//		srv := redistest.Standalone(t)
//		c := srv.Client(t) // closed by t.Cleanup before the server stops
//		...
//	}
//
// # One server for a whole package
//
// Start, StartCluster, StartReplicated and StartSentinel do the same without a
// testing.TB and return an error instead. Main turns that error into the right
// exit code and stops the servers before it checks for goroutine leaks with
// goleak:
//
//	var srv *redistest.Server
//
//	func TestMain(m *testing.M) {
//		redistest.Main(m, func() (func(), error) {
//			var err error
//			srv, err = redistest.Start()
//			if err != nil {
//				return nil, err
//			}
//			return srv.Stop, nil
//		})
//	}
//
// Tests then share srv and must use unique key names. A test that kills,
// pauses or restarts a server must start its own with Standalone instead, or
// the other tests lose theirs. Sharing matters most for clusters: a
// standalone server is ready in tens of milliseconds, but a cluster takes two
// to four seconds, because a new master waits two seconds before it reports
// cluster_state:ok. A TestMain that starts several servers returns one
// teardown that stops them all, replicas before their masters.
//
// # Availability
//
// Tests never fail just because Redis is not installed, except in CI. When
// redis-server (or, for Cluster, redis-cli) is
// missing, the testing.TB functions call t.Skip, and Main prints the reason and
// exits 0 without running the tests. When the environment variable CI is true,
// both fail instead.
//
// When REDIS_ADDR is set (host:port), Standalone and Start start nothing and
// return a Server for that address. Such an external server cannot be killed,
// paused or restarted: those methods return an error wrapping ErrExternal,
// its Stop does nothing, and Standalone with extra arguments skips the test.
// Tests that need process control call RequireProcess first, which skips them
// when REDIS_ADDR is set. Cluster, Replicated and Sentinel ignore REDIS_ADDR
// and always start their own processes.
//
// # Cleanup
//
// On Linux every server is started with Pdeathsig set to SIGKILL, so it dies
// with the test binary even if the binary is killed or panics before any
// cleanup runs, and in its own process group, so Ctrl-C in a terminal reaches
// only the test binary. Stop waits for the process to exit and removes its
// directory; after Stop no goroutine of this package remains. The process
// handling itself lives in internal/redisproc, which "interlock demo" uses
// too to start its throwaway server; this package adds what tests need.
//
// The clients returned by NewClient and the Client methods are ordinary
// rueidis clients with default options.
package redistest
