package run

import (
	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"
)

// usage is the help of "interlock run".
const usage = `Usage: interlock run [flags] LOCK... -- CMD [ARGS...]
       interlock run --kind semaphore [--permits N] [flags]
                     NAME -- CMD [ARGS...]
       interlock run --kind expirable-semaphore [--permits N] [--lease D]
                     [flags] NAME -- CMD [ARGS...]
       interlock run --kind ratelimit [--permits N] [--wait D] [flags]
                     NAME -- CMD [ARGS...]

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

With --kind ratelimit, run takes N permits (--permits, default 1) of the
rate limiter NAME, RedissonClient.getRateLimiter(NAME), waiting as long as
the limiter says they take to come free (with --wait D: exit 75 as soon as
they would come free only after D), then runs CMD. The permits are never
given back: they leave the limiter's window an interval after they were
taken, so nothing is released when CMD exits and nothing can be lost while
it runs; --lease, --watchdog-timeout and --grace do not apply and are
refused. A limiter that is not set exits 1; N above its rate, or a
PER_CLIENT limiter (each interlock process is a client of its own), exits
64. 'interlock ratelimit set' sets one up.

Before anything changes, run refuses (exit 64) a name whose key holds what
--kind cannot work on: another type of data, a hash that is no lock (fields
that are not "<client id>:<owner id>"), a read/write lock for another kind
or the reverse, a semaphore's count for a lock, a lock or a string that is
no integer for a semaphore. A wait that lasts more than 3s says once, on
stderr, what it waits for (the lock's holders and TTL, the free permits, a
semaphore nobody set up) and which 'interlock inspect' shows it.

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
                     ratelimit  RRateLimiter, getRateLimiter(NAME): takes
                                --permits permits before CMD runs
  --permits N        the number of permits a semaphore kind or a rate
                     limiter takes, at least 1. Default 1. Not for locks.
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
