package main

import (
	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"
)

// mainUsage is printed by "interlock help" and when no command is given.
const mainUsage = `interlock: Redisson-compatible distributed locks, semaphores and latches for
the shell.

Usage:
  interlock run       [--redis URL] [--kind KIND] [--permits N] [--wait D]
                      [--lease D] [--watchdog-timeout D] [--grace D]
                      LOCK... -- CMD [ARGS...]
  interlock semaphore init [--redis URL] [--kind KIND] [--ttl D] NAME N
  interlock semaphore add  [--redis URL] [--kind KIND] NAME N
  interlock latch     init [--redis URL] NAME N
  interlock latch     countdown [--redis URL] NAME
  interlock latch     await [--redis URL] [--wait D] NAME
  interlock inspect   [--redis URL] [--json] [--kind KIND] NAME...
  interlock ls        [--redis URL] [--json] [--limit N] [--counters] [PATTERN]
  interlock doctor    [--redis URL] [--json] [--name NAME] [--acl-user USER]
                      [--wait-replicas]
  interlock unlock    [--redis URL] [--kind KIND] --force LOCK
  interlock demo      [--redis URL] [--chart FILE]
  interlock help      [COMMAND]

  run        hold LOCK (several: all at once), or N permits of a semaphore,
             while CMD runs, like flock(1) across machines
  semaphore  set up a semaphore's permits, or add some
  latch      set up a count-down latch, count it down, or wait until open
  inspect    show who holds and who waits for LOCK, a semaphore's permits,
             a latch's count, whoever wrote them (Go or Java Redisson)
  ls         list the locks, semaphores and latches in Redis (SCAN, never
             KEYS), flagging zombies, stale waiters, orphan keys, leaked
             permits
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
Latches are Redisson's RCountDownLatch (getCountDownLatch).

Flags may be written -flag or --flag. Durations look like 500ms, 10s, 2m.

` + redisconn.FlagHelp + `
` + exit.Help

// runUsage is the help of "interlock run".
const runUsage = `Usage: interlock run [flags] LOCK... -- CMD [ARGS...]
       interlock run --kind semaphore [--permits N] [flags]
                     NAME -- CMD [ARGS...]
       interlock run --kind expirable-semaphore [--permits N] [--lease D]
                     [flags] NAME -- CMD [ARGS...]

Acquires LOCK, by default the reentrant lock that Redisson's
RedissonClient.getLock(LOCK) returns (--kind chooses another kind), runs CMD
with stdin, stdout and stderr passed through and INTERLOCK_LOCK=LOCK added to
its environment, then unlocks. The exit status is CMD's: its exit code, or
128+N when a signal N killed it. With --kind fenced, CMD also gets
INTERLOCK_FENCE_TOKEN, the fencing token of this acquisition: larger than
every token handed out for LOCK before, so that a resource can refuse the
writes of an older holder.

While CMD runs the lock is kept alive by the watchdog (renewed every third of
--watchdog-timeout) or, with --lease, holds for that long only. If the lock is
lost while CMD runs (its lease ended, it expired during a pause or partition,
someone force-unlocked it), interlock sends SIGTERM to CMD, SIGKILL after
--grace, and exits 79: CMD was no longer protected by the lock. It also exits
79 when CMD finished but the lock turned out to be gone already at unlock.

With several LOCKs, run holds all of them at once, as Redisson's
RedissonMultiLock over the locks of --kind of those names: it takes them one
at a time in the order given and, when one is busy, gives back those it took
and starts again, so that CMD runs with all of them held or does not run;
--wait bounds the whole gathering. INTERLOCK_LOCK holds the names
comma-separated, and with --kind fenced INTERLOCK_FENCE_TOKEN holds their
tokens, in the same order. The loss of any of them is a lost lock (exit 79).
Every process that takes several of these locks, Java or Go, must take them
in one order (sort the names): in different orders two of them can each hold
a lock the other waits for until --wait runs out. Each name may be given
once; semaphores cannot be combined.

With --kind semaphore, run takes N permits (--permits, default 1) of the
semaphore NAME, RedissonClient.getSemaphore(NAME), waiting as for a lock, and
releases them when CMD exits. Such permits cannot be lost: the semaphore
records no holder, so nothing renews them and nothing takes them back. If
interlock dies without releasing them (SIGKILL, a crash), they are gone
until someone adds them again ('interlock semaphore add NAME N'); use an
expirable semaphore when that matters. A semaphore that was never set up
has no permits: run waits until 'interlock semaphore init' or a release
provides some.

With --kind expirable-semaphore, run takes N permits of the
RPermitExpirableSemaphore NAME, each with an id and a lease: renewed by the
watchdog (every third of --watchdog-timeout) or, with --lease, for that long
only. CMD gets their ids in INTERLOCK_PERMIT_IDS, comma-separated, each 32
lower-case hex characters (Redisson's form). A permit of a crashed interlock
comes back within --watchdog-timeout. When a permit is lost while CMD runs
(its lease ended, a client released or reclaimed it, the semaphore was
deleted), CMD is terminated as for a lost lock and run exits 79; it also
exits 79 when a permit is gone at release. Permits are acquired all at once
or not at all; at most 1000.

CMD runs in a process group of its own, so that these signals reach its
children too; SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to interlock are
passed on to that group. When interlock runs in the foreground of its
terminal, CMD stays in interlock's process group instead, so that it can use
the terminal: the terminal's signals (Ctrl-C, Ctrl-\, Ctrl-Z) then reach CMD
directly, SIGTERM is passed on, and a lost lock signals CMD alone. If
interlock itself dies, the kernel sends CMD SIGTERM (Linux).

Flags:
` + redisconn.FlagHelp + cli.NamePrefixHelp + `  --kind KIND        the kind of lock or semaphore (Redisson's of the same
                     name):
                     reentrant  RLock, getLock(LOCK) (the default)
                     fair       RFairLock, getFairLock(LOCK): waiters take
                                the lock in the order they queued
                     read       getReadWriteLock(LOCK).readLock(): held by
                                any number of readers at once, no writer
                     write      getReadWriteLock(LOCK).writeLock(): one
                                writer, no readers
                     fenced     RFencedLock, getFencedLock(LOCK): exports
                                INTERLOCK_FENCE_TOKEN to CMD
                     spin       RSpinLock, getSpinLock(LOCK): RLock's data,
                                waiting by polling with backoff
                     semaphore  RSemaphore, getSemaphore(NAME): holds
                                --permits permits
                     expirable-semaphore
                                RPermitExpirableSemaphore,
                                getPermitExpirableSemaphore(NAME): holds
                                --permits permits with ids, exported in
                                INTERLOCK_PERMIT_IDS
  --permits N        the number of permits a semaphore kind takes, at least
                     1. Default 1. Not for locks.
  --wait D           give up when the lock (the permits) is still busy after
                     D and exit 75; 0 makes a single attempt. Default: wait
                     until it is free or interlock gets SIGINT or SIGTERM.
                     For a fair lock D is also how long the waiter keeps its
                     place in the queue after the waiter ahead of it was due
                     (with no --wait: 5m, Redisson's default); a waiter that
                     gives up leaves the queue.
  --lease D          hold the lock (the expirable permits) for at most D, with
                     no watchdog; CMD is terminated when the lease ends before
                     it does. At least 1ms; not for --kind semaphore.
                     Default 0: the watchdog keeps the lock while CMD runs.
  --watchdog-timeout D
                     the lease of a watchdog hold, renewed every D/3; a
                     crashed interlock's lock (expirable permits) expires
                     within D. Use the same value as the Java fleet's
                     lockWatchdogTimeout.
                     Default 30s, minimum 30ms.
  --grace D          after SIGTERM on a lost lock, wait D for CMD to exit
                     before sending SIGKILL. Default 10s.

` + exit.Help

// semaphoreUsage is the help of "interlock semaphore".
const semaphoreUsage = `Usage: interlock semaphore init [flags] NAME N
       interlock semaphore add [flags] NAME N

init sets up the semaphore NAME with N free permits (N at least 1), as
Redisson's trySetPermits(N): only if it is not set up already. It exits 1,
changing nothing, when the semaphore exists. With --ttl D the semaphore's key
expires after D, as trySetPermits(N, D), unless an add clears the TTL.

add adds N free permits, as addPermits(N), waking as many waiters; the
semaphore is created if it does not exist. A negative N takes permits away
(the free count may go below 0). It clears the semaphore's TTL. This is how
permits lost with a crashed holder of --kind semaphore are given back.

Either works on both kinds of semaphore, which share the key of free
permits; --kind expirable-semaphore makes add announce the permits as an
RPermitExpirableSemaphore does, for Java waiters on one.

Flags:
` + redisconn.FlagHelp + `  --kind KIND        semaphore (the default: RSemaphore) or
                     expirable-semaphore (RPermitExpirableSemaphore).
  --ttl D            init: the semaphore's key expires after D, at least 1ms.
                     Not for expirable-semaphore.

Exit status: 0 on success, 1 when init found the semaphore already set, 64
for bad arguments (N not an integer, init of fewer than 1 permit, add of 0)
or a name whose key holds another type of data, 69 when Redis fails.
`

// latchUsage is the help of "interlock latch".
const latchUsage = `Usage: interlock latch init [flags] NAME N
       interlock latch countdown [flags] NAME
       interlock latch await [flags] [--wait D] NAME

The count-down latch NAME is Redisson's RCountDownLatch of that name:
closed while its count is above 0, open at 0 or when it does not exist.

init closes the latch with count N (0 or more), as trySetCount(N): only if
it does not exist. It exits 1, changing nothing, when the latch exists.

countdown takes 1 from the count, as countDown(); at 0 the latch opens and
every waiter, Go or Java, wakes. On an open latch it does nothing.

await returns once the latch is open: at once when it is, else when a
countdown opens it. With --wait D it gives up after D and exits 75, when a
last look at the count finds it still closed.

Flags:
` + redisconn.FlagHelp + `  --wait D           await: give up after D and exit 75 if the latch is still
                     closed; 0 looks once. Default: wait until it opens or
                     interlock gets SIGINT or SIGTERM (exit 128+N).

Exit status: 0 on success (await: the latch is open), 1 when init found the
latch already set, 64 for bad arguments (a negative count) or a name whose
key holds another type of data, 69 when Redis fails, 75 when await's --wait
ran out.
`

// demoUsage is the help of "interlock demo".
const demoUsage = `Usage: interlock demo [--redis URL] [--chart FILE]

Tells the watchdog story with real Redis and real processes, in about 10
seconds: a job longer than its fixed lease (two workers process the same
order), the same job with the watchdog (safe), a holder that crashes (its
lock expires within the watchdog timeout) and a holder that is paused past
its lease (it loses the lock and learns so before it writes).

Without --redis (and without $INTERLOCK_REDIS) it uses the Redis on
127.0.0.1:6379 if one answers there, and otherwise starts a throwaway
redis-server from PATH on a free port, without persistence, and removes it
afterwards. Keys it creates are deleted at the end.

Flags:
` + redisconn.FlagHelp + `  --chart FILE       also write the scenes' timeline to FILE, an SVG image a
                     browser shows: for each holder, the lock's remaining TTL
                     as measured, and a flag per acquisition, renewal and
                     release, green when it succeeded, red when it failed.

Exit status: 0 when every scene ran as told, 1 when one did not, 64 for bad
flags, 69 when no Redis could be used, 130 on Ctrl-C.
`
