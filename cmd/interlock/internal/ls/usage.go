package ls

import "github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"

// usage is the help of "interlock ls".
const usage = `Usage: interlock ls [flags] [PATTERN]

Lists the synchronizers in Redis, whoever wrote them (interlock or Java
Redisson), one row each: name, kind, TTL, holders (as stored: the hash field
"<client id>:<owner id>", then xN for N holds) or a semaphore's or latch's
state, waiters, and flags for what looks wrong. Notes below the table
explain each flag. Kinds and holders are decoded as by inspect, which shows
one name in full.

It walks the keyspace with SCAN (never KEYS), a --count hint at a time, on
the one server or on every master of a cluster; it only reads. PATTERN is a
Redis glob (*, ?, [abc], \ quotes) on the names of synchronizers as stored
in Redis, default *: 'ls "orders:*"' also finds the keys Redisson derives
from those names, such as redisson_lock_queue:{orders:1}. A scan that takes
longer than --progress prints a progress line on stderr every --progress:
"interlock ls: scanned 40000 keys, 12 synchronizers".

What is found, and how:
  locks       a hash whose every field is "<client id>:<owner id>" holding
              an integer, the client id a UUID (Redisson's and interlock's
              are): a reentrant lock; "reentrant*": a spin lock, a
              non-reentrant lock and a fair lock nobody waits for are
              stored just alike. With redisson_lock_token:{NAME} beside it,
              or that key alone (a fenced lock's counter outlives every
              hold): fenced. With redisson_lock_queue:{NAME} or
              redisson_lock_timeout:{NAME}: fair, its queue in WAITERS.
              With a "mode" field, "read" or "write", and the writer's
              field ending in ":write": read/write.
  expirable-semaphore
              {NAME}:timeout, a sorted set of 16-byte permit ids.
  ratelimit   a hash with the fields rate, interval, type (and
              keepAliveTime), Redisson's RRateLimiter config; or its
              {NAME}:value or {NAME}:permits. HOLDERS shows its type, rate
              and interval and its free permits and permits taken, or for
              PER_CLIENT the number of clients; the clients' keys
              {NAME}:value:<id> and {NAME}:permits:<id> belong to NAME and
              are not listed apart.
  semaphore, latch
              a string holding an integer is a semaphore, a latch, or any
              counter of an application: Redis stores them alike. ls lists
              one only while a client waits on it (its channel,
              redisson_sc:{NAME} or redisson_countdownlatch__channel__{NAME},
              has subscribers), or with --counters, as "semaphore/latch".
  skipped     unlock latches (redisson_unlock_latch:...) and interlock's
              receipts (interlock_receipt:...) are short-lived keys of
              calls in flight: counted in the summary, not listed.
WAITERS shows a fair lock's queue, and for every kind the number of
connections subscribed to its channels (classic and sharded, on every
node): its waiting clients, Java or Go, one per client process however many
of its threads wait; one that has just stopped waiting may still count.
Names (and holders) longer than 64 bytes are shortened in the table, with
their length; --json has them whole.

Flags (FLAGS column; JSON "flags"):
  zombie      a lock with no TTL (or a read hold whose key has none): it
              never expires. Redisson and interlock always set one, so
              something else wrote it (by hand, or an application's own
              script); 'interlock unlock --force' frees it.
  stale-waiters
              fair waiters whose deadline passed: taken for dead, dropped
              when they reach the head of the queue.
  stale-readers
              readers all of whose read holds' timeout keys are gone: dead
              readers still named in the hash.
  orphan-read-timeouts
              read hold timeout keys {NAME}:<owner>:rwlock_timeout:<k> of
              no read hold: the hash is gone, or names no such reader, or
              holds fewer than k.
  leaked-permits
              an expirable semaphore's permits whose lease ended but that
              are not given back yet (the next operation on the semaphore
              does it).

Flags:
` + redisconn.FlagHelp + `  --json             print one JSON object: synchronizers (each with
                     inspect's fields: name, kind, locked, ttl_ms, mode,
                     holders, queue, fence_token, permits, count, acquired,
                     rate_limiter, key_type, notes; and alike: the kinds stored the same
                     way, subscribers, flags, orphan_read_timeouts: key,
                     ttl_ms), scanned_keys (the keys SCAN returned, those
                     matching match, SCAN's MATCH, when PATTERN has a
                     literal prefix), nodes, truncated (--limit was
                     reached), unlock_latches, receipts, counters, notes.
  --limit N          list at most N synchronizers, and stop the scan when N
                     are found. 0: no limit. Default 1000.
  --count N          the COUNT hint of each SCAN: about how many keys each
                     call returns. Default 1000.
  --counters         also list every string key holding an integer, as a
                     semaphore/latch.
  --progress D       the interval of the progress lines on stderr, or off.
                     0 writes one after every SCAN call. Default 1s.

Exit status: 0 when the scan finished (whatever it found, --limit reached
included), 64 for bad flags, 69 when Redis fails.
`
