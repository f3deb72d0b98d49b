// Command interlock uses Redisson-compatible distributed locks,
// semaphores and count-down latches from the shell: its locks are the ones
// a Java application gets from RedissonClient.getLock(name), getFairLock,
// getReadWriteLock and getFencedLock, so the two exclude each other, and
// its semaphores and latches are getSemaphore's,
// getPermitExpirableSemaphore's and getCountDownLatch's.
//
// Usage:
//
//	interlock run       [--redis URL] [--name-prefix P] [--kind KIND]
//	                    [--permits N] [--wait D] [--lease D]
//	                    [--watchdog-timeout D] [--grace D]
//	                    LOCK... -- CMD [ARGS...]
//	interlock leader    [--redis URL] [--name-prefix P] [--value V]
//	                    [--watchdog-timeout D] [--grace D] NAME -- CMD [ARGS...]
//	interlock semaphore init [--redis URL] [--name-prefix P] [--kind KIND]
//	                    [--ttl D] NAME N
//	interlock semaphore add  [--redis URL] [--name-prefix P] [--kind KIND]
//	                    NAME N
//	interlock latch     init [--redis URL] [--name-prefix P] NAME N
//	interlock latch     countdown [--redis URL] [--name-prefix P] NAME
//	interlock latch     await [--redis URL] [--name-prefix P] [--wait D] NAME
//	interlock inspect   [--redis URL] [--name-prefix P] [--json] [--kind KIND]
//	                    NAME...
//	interlock ls        [--redis URL] [--json] [--limit N] [--counters] [PATTERN]
//	interlock doctor    [--redis URL] [--json] [--name NAME] [--acl-user USER]
//	                    [--wait-replicas]
//	interlock unlock    [--redis URL] [--name-prefix P] [--kind KIND] --force
//	                    LOCK
//	interlock demo      [--redis URL] [--chart FILE]
//	interlock help      [COMMAND]
//
// run is a distributed flock(1): it acquires LOCK (waiting forever by
// default, once with --wait 0, up to D with --wait D), runs CMD with
// INTERLOCK_LOCK=LOCK in its environment, and unlocks when CMD exits. The
// watchdog keeps the lock alive while CMD runs, or --lease gives it a fixed
// lease. If the lock is lost while CMD runs, CMD gets SIGTERM (to its
// process group), SIGKILL after --grace, and run exits 79. With several
// LOCKs, run holds them all at once as one Redisson MultiLock, taken in the
// order given (every process, Java or Go, must use one order: sort the
// names); losing any of them is losing the lock.
//
// KIND is reentrant (the default; Redisson's RLock), fair (RFairLock:
// waiters are served in the order they queued; --wait is also the
// waiter's grace in the queue, 5m without it), read or write (the two
// halves of RReadWriteLock) or fenced (RFencedLock: CMD also gets
// INTERLOCK_FENCE_TOKEN, the acquisition's fencing token, larger than every
// token handed out for the lock before).
//
// leader campaigns in the election NAME (package election: the leader
// holds the fenced lock NAME, RFencedLock in Java) and runs CMD only while
// it leads, with INTERLOCK_FENCING_TOKEN (also INTERLOCK_FENCE_TOKEN), the
// term's fencing token, and INTERLOCK_LEADER_VALUE, --value (default
// host:pid), in its environment; it resigns when CMD exits, and ends CMD
// when leadership is lost as run does when its lock is, with exit 79.
//
// run --kind semaphore holds --permits N permits (default 1) of an
// RSemaphore while CMD runs, waiting for them as for a lock (--wait, exit
// 75 when busy), and releases them after. Such permits record no holder:
// they cannot be lost, nor do they come back by themselves if interlock is
// killed. run --kind expirable-semaphore holds permits of an
// RPermitExpirableSemaphore, renewed by the watchdog or with a fixed
// --lease; CMD gets their ids in INTERLOCK_PERMIT_IDS (comma-separated,
// 32 hex characters each), and a permit lost while CMD runs ends CMD as a
// lost lock does, with exit 79.
//
// semaphore init NAME N sets up a semaphore with N permits (0 or more)
// unless it is set up already (exit 1); semaphore add NAME N adds N
// permits (a negative N takes some away). latch init NAME N closes a latch
// with count N unless it exists (exit 1); latch countdown NAME counts it
// down; latch await NAME waits until it is open, for at most --wait D
// (exit 75 when it runs out).
//
// Every command that acts on a name first makes sure its key holds what
// the kind works on: another type of data, a hash that is no lock, a lock
// of another kind or a count that is no integer is refused with exit 64
// before anything changes. A wait (run, latch await) that lasts more than
// 3s says once, on stderr, what it waits for (the lock's holders and TTL,
// the free permits, a semaphore nobody set up, the latch's count) and
// which inspect command shows it.
//
// inspect decodes what Redis holds for a lock, whoever wrote it (Go or
// Java): its kind and TTL; its holders (client id, owner id, hold count),
// for a read/write lock its mode, readers with the TTL of each read hold
// and the writer; for a fair lock the queue in order, each waiter with its
// deadline as an absolute time and as the time left, stale waiters marked;
// for a fenced lock the current token; for a semaphore its free permits
// and TTL, for an expirable one each acquired permit's id and lease left
// (without giving back expired ones, as Redisson's reads would); for a
// latch its count. A string key holding an integer, with nothing beside it,
// is an RSemaphore or an RCountDownLatch alike: inspect shows it as
// "semaphore/latch" with both readings, unless --kind semaphore, latch or
// expirable-semaphore says which, or clients waiting on the name's
// channels do (inspect counts them, and shows a semaphore nobody set up
// that has waiters as such). It prints a table or JSON (one object per
// line); what does not look like a Redisson object becomes a note, never a
// failure. ls walks the keyspace with SCAN (never KEYS; every master of a
// cluster) and lists every synchronizer whose name matches PATTERN, with
// its kind, TTL, holders and waiters, flagging zombies (locks with no TTL),
// stale fair waiters and readers, orphan read/write timeout keys and
// expired permits not yet given back; a long scan prints its progress on
// stderr. doctor checks a live server, node by node on a cluster, for the
// settings that silently break locks (an evicting maxmemory-policy,
// asynchronous replicas and their lag, no persistence, lua-time-limit,
// clock skew, the ACL each kind needs, slot coverage, sharded pub/sub),
// explains each finding and exits with the worst one's status. unlock
// --force deletes a lock whoever holds it, with the forceUnlock of its
// kind (found in Redis, or given with --kind), and only a key shaped as
// that kind's lock: anything else (an application's hash, a string, a
// semaphore) is refused with exit 64 and left as it is. demo tells, with real
// timings, why locks need a watchdog; with no Redis at hand it starts a
// throwaway redis-server from PATH. demo --chart FILE also
// writes the scenes' timeline as an SVG image: each holder's remaining TTL
// over time, and a green or red flag per acquisition, renewal and release.
//
// --redis takes redis://, rediss:// and unix:// URLs (or host:port);
// several, repeated or comma-separated, name the nodes of a cluster. The
// default is $INTERLOCK_REDIS, else redis://127.0.0.1:6379. A server that
// wants a password takes it in the URL, redis://:PASSWORD@host:port. With
// --name-prefix P, every NAME is P+NAME in Redis, as a Java fleet's
// NameMapper makes it. Tables shorten names longer than 64 bytes (with
// their length); JSON has them whole.
//
// # Exit status
//
// The codes are stable; scripts may rely on them.
//
//	0-125  run: CMD's exit status; other commands: 0 on success (doctor:
//	       nothing worse than info)
//	1      another failure (a demo scene that did not go as told, a lock
//	       unlock left because it is not locked as --kind said, a semaphore
//	       or latch init that found it set already, a warning of doctor)
//	2      doctor: a hazard, a setting that can silently break locks
//	64     usage error: bad flags or arguments (permits below 1, a negative
//	       count, a lease under 1ms), an unusable name, a name whose key
//	       holds another type of data, another kind of lock or a count
//	       that is no integer, unlock without --force or of a key that is
//	       no lock of that kind
//	69     Redis unreachable or failing (a password it wants missing or
//	       refused included), or another failure before CMD started
//	       (doctor: an error, such as a node that cannot be reached)
//	75     run: the lock or permits were still busy when --wait ran out;
//	       latch await: the latch was still closed when --wait ran out
//	79     run: the lock or an expirable permit was lost while CMD ran (CMD
//	       was terminated), or was found gone when CMD exited; leader: the
//	       leadership was, in the same ways
//	126    run: CMD could not be executed
//	127    run: CMD was not found
//	128+N  run: CMD died of signal N, or interlock got signal N while
//	       waiting for the lock (SIGINT 130, SIGTERM 143)
//
// Errors are printed on stderr, prefixed "interlock: ". They never show
// owner ids or passwords; inspect shows owner ids, which is its purpose.
//
// # Signals and process groups
//
// run starts CMD in a process group of its own and passes SIGINT, SIGTERM,
// SIGHUP and SIGQUIT on to it, so that they, and the signals of a lost
// lock, reach CMD's children too. When run is in the foreground of its
// controlling terminal, CMD stays in run's process group instead, so that
// it can read the terminal; the terminal's signals then reach it directly,
// only SIGTERM is passed on, and a lost lock signals CMD alone. On Linux
// CMD gets SIGTERM if interlock dies, since nobody renews its lock then.
package main
