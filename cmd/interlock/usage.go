package main

import (
	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"
)

// mainUsage is printed by "interlock help" and when no command is given.
const mainUsage = `interlock: Redisson-compatible distributed locks, semaphores, latches and rate
limiters for the shell.

Usage:
  interlock run       [--redis URL] [--name-prefix P] [--kind KIND]
                      [--permits N] [--wait D] [--lease D]
                      [--watchdog-timeout D] [--grace D]
                      LOCK... -- CMD [ARGS...]
  interlock leader    [--redis URL] [--name-prefix P] [--value V]
                      [--watchdog-timeout D] [--grace D] NAME -- CMD [ARGS...]
  interlock semaphore init [--redis URL] [--name-prefix P] [--kind KIND]
                      [--ttl D] NAME N
  interlock semaphore add  [--redis URL] [--name-prefix P] [--kind KIND]
                      NAME N
  interlock latch     init [--redis URL] [--name-prefix P] NAME N
  interlock latch     countdown [--redis URL] [--name-prefix P] NAME
  interlock latch     await [--redis URL] [--name-prefix P] [--wait D] NAME
  interlock ratelimit set [--redis URL] [--name-prefix P] [--per-client]
                      [--keep-alive D] [--if-unset] NAME RATE INTERVAL
  interlock ratelimit acquire [--redis URL] [--name-prefix P] [--permits N]
                      [--wait D] NAME
  interlock inspect   [--redis URL] [--name-prefix P] [--json] [--kind KIND]
                      NAME...
  interlock ls        [--redis URL] [--json] [--limit N] [--counters] [PATTERN]
  interlock doctor    [--redis URL] [--json] [--name NAME] [--acl-user USER]
                      [--wait-replicas]
  interlock unlock    [--redis URL] [--name-prefix P] [--kind KIND] --force
                      LOCK
  interlock demo      [--redis URL] [--chart FILE]
  interlock help      [COMMAND]

  run        hold LOCK (several: all at once), or N permits of a semaphore,
             while CMD runs, like flock(1) across machines; or take N
             permits of a rate limiter before CMD runs
             while CMD runs, like flock(1) across machines
  leader     run CMD only while this process leads the election NAME
             (the fenced lock NAME), with its fencing token
  semaphore  set up a semaphore's permits, or add some
  latch      set up a count-down latch, count it down, or wait until open
  ratelimit  set a rate limiter's rate, or take permits from it
  inspect    show who holds and who waits for LOCK, a semaphore's permits,
             a latch's count, a rate limiter's rate and window, whoever
             wrote them (Go or Java Redisson)
  ls         list the locks, semaphores, latches and rate limiters in Redis
             (SCAN, never KEYS), flagging zombies, stale waiters, orphan
             keys, leaked permits
  doctor     check a live server, node by node, for settings that break
             locks (eviction, replication, persistence, ACL, ...)
  unlock     delete LOCK whoever holds it (needs --force)
  demo       show with real Redis why locks need a watchdog

KIND is the kind of lock or semaphore, the same as Redisson's of that name:
  reentrant  RLock (getLock), the default
  fair       RFairLock (getFairLock): waiters served in arrival order
  read       RReadWriteLock's readLock(): shared with other readers
  write      RReadWriteLock's writeLock(): exclusive
  fenced     RFencedLock (getFencedLock): each acquisition gets a larger token
  spin       RSpinLock (getSpinLock): RLock's data; waiters poll, no pub/sub
  semaphore  RSemaphore (getSemaphore): N permits, no record of who holds them
  expirable-semaphore
             RPermitExpirableSemaphore (getPermitExpirableSemaphore):
             permits with ids and leases
  ratelimit  RRateLimiter (getRateLimiter): run takes --permits permits,
             never given back
Latches are Redisson's RCountDownLatch (getCountDownLatch).

Flags may be written -flag or --flag. Durations look like 500ms, 10s, 2m.
A name whose key holds what the command cannot work on (another type of
data, a lock of another kind, a counter that is no integer) is refused with
exit 64 before anything changes. A wait that lasts more than 3s says once,
on stderr, what it waits for and which 'interlock inspect' shows it.

` + redisconn.FlagHelp + cli.NamePrefixHelp + `
` + exit.Help
