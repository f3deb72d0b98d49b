// Package reliability holds interlock's fault-injection suite: the tests of
// docs/reliability.md, which break Redis, the network and the lock holders
// on purpose and check, with an independent oracle, that nothing a lease
// lock can prevent went wrong.
//
// The package has no API; everything is in its tests. They run in two tiers:
//
//	go test ./reliability                    the PR gate (part of make test)
//	go test ./reliability -args -tier=nightly the full sizes (make nightly)
//
// INTERLOCK_TIER=nightly selects the nightly tier too.
package reliability
