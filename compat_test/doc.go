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
//   - expiry of a watchdog lock whose holder was killed with SIGKILL.
//
// Run them with
//
//	go test -race -count=1 ./compat_test/
//
// They need redis-server and redis-cli on PATH; without them they skip,
// except with CI=true, where they fail.
package compat
