// Package compat holds interlock's wire-compatibility tests; it has no
// non-test code.
//
// The tests run interlock's locks against real redis-server processes and
// check what Redis sees, byte for byte, against the test vectors of
// reference/redisson-protocol.md §15:
//
//   - golden tests: the exact lock hash, TTLs, unlock latch keys, the
//     commands each script runs (captured with MONITOR) and the messages it
//     publishes (captured with PSUBSCRIBE, SUBSCRIBE and SSUBSCRIBE taps), on
//     a standalone server and on a three-master cluster with sharded
//     pub/sub;
//   - the SHA1 of every embedded script, as SCRIPT LOAD computes it;
//   - mutual exclusion across operating-system processes (the test binary
//     re-executes itself as workers), standalone and cluster;
//   - expiry of a watchdog lock whose holder was killed with SIGKILL;
//   - live interop with Java: a small Redisson program (peer/, a Maven
//     project built by the tests for Redisson 4.7.0 and 3.52.0) takes
//     commands on stdin, one Java thread per logical thread, and the tests
//     interleave Go and Java operations on the same locks of every kind.
//
// Run them with
//
//	go test -race -count=1 ./compat_test/
//
// They need redis-server and redis-cli on PATH, and java and mvn for the
// interop tests; without them they skip, except with CI=true, where they
// fail.
package compat
