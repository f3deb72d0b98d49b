package main

import "fmt"

// redisHelp describes --redis; every command that talks to Redis has it.
const redisHelp = `  --redis URL        Redis to use: redis://[user:password@]host:port[/db],
                     rediss://... (TLS), unix:///path/to/redis.sock, or plain
                     host:port. Repeat the flag, or separate URLs with commas,
                     to name several nodes of one Redis Cluster. The default
                     is $INTERLOCK_REDIS, else redis://127.0.0.1:6379.
`

// exitHelp lists the exit codes (see exitcode.go).
const exitHelp = `Exit status:
  0-125   run: CMD's own exit status; other commands: 0 on success
  1       another failure (for example a demo scene that went wrong, or a
          lock unlock left because it is not locked as --kind said)
  64      usage error: bad flags or arguments, an unusable lock name,
          unlock without --force or of a key that is no lock of that kind
  69      Redis unreachable or failing, or another failure before CMD started
  75      run: the lock was still busy when --wait ran out
  79      run: the lock was lost while CMD ran (CMD was terminated), or was
          found gone when CMD exited
  126     run: CMD could not be executed
  127     run: CMD was not found
  128+N   run: CMD died of signal N, or interlock got signal N
          (SIGINT 130, SIGTERM 143) while waiting for the lock
A CMD that itself exits with 64, 69, 75 or 79 cannot be told apart from
interlock by the code alone; interlock's own failures also print a line
starting with "interlock: " on stderr.
`

// mainUsage is printed by "interlock help" and when no command is given.
const mainUsage = `interlock: Redisson-compatible distributed locks for the shell.

Usage:
  interlock run     [--redis URL] [--kind KIND] [--wait D] [--lease D]
                    [--watchdog-timeout D] [--grace D] LOCK -- CMD [ARGS...]
  interlock inspect [--redis URL] [--json] LOCK...
  interlock unlock  [--redis URL] [--kind KIND] --force LOCK
  interlock demo    [--redis URL]
  interlock help    [COMMAND]

  run      hold LOCK while CMD runs, like flock(1) across machines
  inspect  show who holds and who waits for LOCK, whoever wrote it (Go or
           Java Redisson)
  unlock   delete LOCK whoever holds it (needs --force)
  demo     show with real Redis why locks need a watchdog

KIND is the kind of lock, the same as Redisson's of that name:
  reentrant  RLock (getLock), the default
  fair       RFairLock (getFairLock): waiters served in arrival order
  read       RReadWriteLock's readLock(): shared with other readers
  write      RReadWriteLock's writeLock(): exclusive
  fenced     RFencedLock (getFencedLock): each acquisition gets a larger token

Flags may be written -flag or --flag. Durations look like 500ms, 10s, 2m.

` + redisHelp + `
` + exitHelp

// runUsage is the help of "interlock run".
const runUsage = `Usage: interlock run [flags] LOCK -- CMD [ARGS...]

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

CMD runs in a process group of its own, so that these signals reach its
children too; SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to interlock are
passed on to that group. When interlock runs in the foreground of its
terminal, CMD stays in interlock's process group instead, so that it can use
the terminal: the terminal's signals (Ctrl-C, Ctrl-\, Ctrl-Z) then reach CMD
directly, SIGTERM is passed on, and a lost lock signals CMD alone. If
interlock itself dies, the kernel sends CMD SIGTERM (Linux).

Flags:
` + redisHelp + `  --kind KIND        the kind of lock (Redisson's of the same name):
                     reentrant  RLock, getLock(LOCK) (the default)
                     fair       RFairLock, getFairLock(LOCK): waiters take
                                the lock in the order they queued
                     read       getReadWriteLock(LOCK).readLock(): held by
                                any number of readers at once, no writer
                     write      getReadWriteLock(LOCK).writeLock(): one
                                writer, no readers
                     fenced     RFencedLock, getFencedLock(LOCK): exports
                                INTERLOCK_FENCE_TOKEN to CMD
  --wait D           give up when the lock is still busy after D and exit 75;
                     0 makes a single attempt. Default: wait until the lock
                     is free or interlock gets SIGINT or SIGTERM. For a fair
                     lock D is also how long the waiter keeps its place in
                     the queue after the waiter ahead of it was due (with no
                     --wait: 5m, Redisson's default); a waiter that gives up
                     leaves the queue.
  --lease D          hold the lock for at most D, with no watchdog; CMD is
                     terminated when the lease ends before it does.
                     Default 0: the watchdog keeps the lock while CMD runs.
  --watchdog-timeout D
                     the lease of a watchdog hold, renewed every D/3; a
                     crashed interlock's lock expires within D. Use the same
                     value as the Java fleet's lockWatchdogTimeout.
                     Default 30s, minimum 30ms.
  --grace D          after SIGTERM on a lost lock, wait D for CMD to exit
                     before sending SIGKILL. Default 10s.

` + exitHelp

// inspectUsage is the help of "interlock inspect".
const inspectUsage = `Usage: interlock inspect [flags] LOCK...

Decodes what Redis holds for each LOCK, whoever wrote it (interlock or Java
Redisson): the kind of lock, its TTL, and one row per holder (client id,
owner or thread id, hold count) and per waiter, or "not locked".

Kinds are detected by Redisson's keys:
  read/write  the hash has a "mode" field: "read" or "write". Each reader's
              row shows the TTL of each of its read holds (the keys
              {LOCK}:<client id>:<owner id>:rwlock_timeout:<k>); a reader
              whose holds' keys are all gone died without unlocking and is
              marked STALE. The writer's field ends in ":write".
  fenced      redisson_lock_token:{LOCK} exists; the detail shows the token
              (the holder's, while the lock is held).
  fair        redisson_lock_queue:{LOCK} or redisson_lock_timeout:{LOCK}
              exists; the waiters are shown in queue order with their
              deadlines, as an absolute time and as the time left. A waiter
              whose deadline passed is marked STALE: it is taken for dead
              and dropped when it reaches the head of the queue. Deadlines
              are the waiting clients' clocks; the time left is this host's.
  reentrant   any other hash. (A fair lock nobody waits for looks the same.)
What does not look like a Redisson lock (another key type, fields that do
not parse, keys of several kinds) is shown as far as it goes and explained
in notes below the table.

Flags:
` + redisHelp + `  --json             print one JSON object per lock, one per line, instead of
                     a table: name, kind, locked, ttl_ms, mode, holders
                     (field, client_id, owner_id, write, holds,
                     read_hold_ttl_ms, stale), queue (position, owner,
                     client_id, owner_id, deadline_ms, deadline,
                     remaining_ms, stale), fence_token, key_type, notes.
                     TTLs are milliseconds: -1 no expiry, -2 (read holds)
                     gone.

Exit status: 0 when every lock was inspected (locked or not), 64 for an
unusable lock name, 69 when Redis fails.
`

// unlockUsage is the help of "interlock unlock".
const unlockUsage = `Usage: interlock unlock [flags] --force LOCK

Deletes the lock LOCK whoever holds it and wakes its waiters, like the
forceUnlock() of Redisson's lock of that kind. This breaks someone else's
lock: its holder keeps working, believing it holds the lock, while the next
waiter takes it. Use it only when the holder is known to be dead and the lock
must not wait for its TTL; "interlock inspect LOCK" shows who holds it.

The kind is the one inspect finds: a read/write lock is unlocked as a read
lock or as a write lock by its mode; a fair lock wakes the head of its queue,
which stays; a fenced lock keeps its token counter. A fair lock that nobody
waits for looks like a reentrant one, and is unlocked as one, which comes to
the same; --kind fair makes sure a waiter that queued meanwhile is woken.

Flags:
` + redisHelp + `  --force            required: confirms that breaking the lock is intended.
  --kind KIND        unlock LOCK as this kind of lock (reentrant, fair,
                     read, write, fenced) instead of the kind found; refused
                     when Redis plainly holds another kind.

Exit status: 0 when the lock is gone (whether or not it was locked), 1 when
it is still there because it is not locked as --kind says (a read/write lock
in the other mode), 64 without --force, for a bad --kind or for a key that is
no lock of that kind, 69 when Redis fails.
`

// demoUsage is the help of "interlock demo".
const demoUsage = `Usage: interlock demo [--redis URL]

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
` + redisHelp + `
Exit status: 0 when every scene ran as told, 1 when one did not, 64 for bad
flags, 69 when no Redis could be used, 130 on Ctrl-C.
`

// commandUsage maps each documented command to its help text.
var commandUsage = map[string]string{
	"run":     runUsage,
	"inspect": inspectUsage,
	"unlock":  unlockUsage,
	"demo":    demoUsage,
	"help":    mainUsage,
}

// usageErrorf returns a usage error (exit 64) for cmd ("" for interlock
// itself) that points to the command's help.
func usageErrorf(cmd, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	help := "interlock help"
	if cmd != "" {
		msg = cmd + ": " + msg
		help += " " + cmd
	}
	return failf(exitUsage, "%s (see '%s')", msg, help)
}
