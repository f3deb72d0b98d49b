// Package redistest starts real redis-server processes for tests: a standalone
// server, a three-master cluster (with replicas if asked), a master with one
// or more replicas, and a master monitored by one or several Redis Sentinels.
// It also injects the faults of the reliability suite into them: crashes,
// restarts, pauses, cut-off replication, promotions, failovers and reshards.
//
// Every server listens on a free port of 127.0.0.1 only, keeps no data on disk
// (--save "" --appendonly no) and runs in its own temporary directory, which
// also holds its log file (redis.log). When a server fails to start, or an
// operation on it times out, the returned error ends with the last lines of
// that log.
//
// # Faults
//
// A Server can be killed (Kill: SIGKILL, as a crash), paused (Pause and
// Resume: SIGSTOP and SIGCONT, connections stay open) and restarted
// (Restart, or RestartAfter to stay down for a while first). A restarted
// server listens on the same port, so clients reconnect to the same address,
// and, since nothing is persisted, comes back empty; WithAOF makes it keep an
// append-only file instead, fsynced on every write, for durability tests.
//
// ReplicaSet (Replicas, StartReplicas) is a master and n replicas.
// PauseReplication cuts a replica off so that later writes never reach it,
// and Promote makes it a master, as a manual failover after the master died.
// WAIT counts acknowledgements of its own connection's writes: send it on the
// connection that wrote, for example with rueidis's Dedicated or DoMulti,
// since a rueidis client sends a lone WAIT, a blocking command, on a pooled
// connection of its own.
//
// SentinelGroup (Sentinels, StartSentinels) is a master, its replicas and
// several sentinels with a quorum and a fast failover (SentinelDownAfter,
// SentinelFailoverTimeout). WaitFailover returns the new master once a quorum
// of sentinels names it; WaitReplicaOfMaster waits until the sentinels have
// turned the old master into a replica after it came back.
//
// Slotted (StartSlotted, SharedSlotted) is a server that enforces hash
// slots behind one address, as managed endpoints and proxies do: cluster
// enabled, owning all 16384 slots, with CLUSTER renamed to SlottedAdmin,
// so that rueidis runs it as a standalone server that still refuses
// commands whose keys span slots.
//
// ClusterWith(t, WithReplicas(1)) is a cluster of three masters with one
// replica each. Failover runs CLUSTER FAILOVER on a replica and Reshard moves
// slots with their keys; both wait until every node agrees, and NodeForSlot,
// NodeForKey, Masters, Replicas and MasterOf follow. Refresh rereads the
// cluster after a change it made on its own.
//
// # Per-test servers
//
// The functions that take a testing.TB (Standalone, Cluster, ClusterWith,
// Replicated, Replicas, Sentinel, Sentinels) start servers for one test and stop them with t.Cleanup, even when
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
// Start, StartCluster, StartReplicated, StartReplicas, StartSentinel and
// StartSentinels do the same without a testing.TB and return an error instead. Main turns that error into the right
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
// cluster_state:ok; a cluster with replicas takes five to eight, until every
// node lists every replica. A TestMain that starts several servers returns one
// teardown that stops them all, replicas before their masters.
//
// ShareServer is that setup for the usual case, one standalone server whose
// address goes to a package variable; SharedCluster starts, on first use,
// one cluster that every test of the package shares, and Main stops it.
//
// # What the tests of every package repeat
//
// Clients makes a package's two ways to open a client of the library
// under test (its constructor passed in: this package does not import the
// library), closed when the test ends; Each and Target run a test on the
// shared server, then on the shared cluster, then on the shared
// slot-enforcing endpoint. Name makes a key name
// unique to the test (and deletes its keys when it ends), Context bounds a
// test that hangs, Eventually and Must shorten testify's calls, Hooked
// counts and tampers with what a client sends, and Exists, PTTL, Do,
// EveryNode, Receipts and OneReceipt read a server's keys. Prompt, Slack
// and Quiet are the timing tolerances of a loaded machine.
//
// # Containers
//
// StartContainer, ContainerCluster, ContainerClusterWith, ContainerReplicas
// and ContainerReplicated (and StartContainerServer, StartContainerCluster,
// StartContainerReplicas without a testing.TB) start the same topologies in
// Docker containers, from the locally built images of the server matrix (Images: Redis 7.0, Redis 8.0, Valkey 8.1; see
// scripts/build-images). They return the same Server, ClusterServers and
// ReplicaSet; Kill, Pause, Resume, Restart and Stop then act on the
// container, and Server.Container gives its image, server version, Exec and
// logs. Every container uses the host network with its server on a free
// port of 127.0.0.1; no Docker network is created and nothing is pulled.
// Without a Docker engine, or when an image is not built, they skip (fail
// with CI=true) as below. docs/testing.md has the details.
//
// With EnvImage set, the sentinels of Sentinel and Sentinels are containers
// too: the image's server in sentinel mode, its config file written into
// the container before it starts.
//
// The Docker work is done through testcontainers-go by a helper process,
// internal/redistest/docker, a module of its own so that neither
// testcontainers-go nor the Docker client is in the library's module
// graph. A test process starts it once, on its first container: the binary
// that REDISTEST_DOCKER names (make test builds one), else go run of its
// source. When the test process ends, however it ends, the helper removes
// what it started.
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
// when REDIS_ADDR is set. The other constructors ignore REDIS_ADDR and
// always start their own processes.
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
