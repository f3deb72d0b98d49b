package inspect

import (
	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"
)

// usage is the help of "interlock inspect".
const usage = `Usage: interlock inspect [flags] NAME...

Decodes what Redis holds for each NAME, whoever wrote it (interlock or Java
Redisson): for a lock its kind, its TTL, and one row per holder (client id,
owner or thread id, hold count) and per waiter, or "not locked"; for a
semaphore its free permits and TTL, and for an expirable one every acquired
permit with its id and the lease it has left; for a latch its count; for a
rate limiter its config and window. It only reads: unlike Redisson's own
reads it gives back no expired permit, and frees no permit of a rate
limiter's window.

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
  reentrant   any other hash. A fair lock nobody waits for looks the same,
              and so does a spin or a non-reentrant lock's hold: on the
              wire each is an RLock hold, and nothing tells them apart.
  expirable-semaphore
              {NAME}:timeout, the sorted set of acquired permits, exists.
              Each permit shows its id (the 16 bytes as 32 hex characters)
              and its lease left, or "no expiry"; one whose lease ended is
              marked EXPIRED: it is given back by the next operation on the
              semaphore, by any client. Leases are the acquiring clients'
              clocks; the time left is this host's.
  ratelimit   the key is a hash of the fields rate, interval, type and
              keepAliveTime (Redisson's RRateLimiter config). Its first row
              shows the type (OVERALL or PER_CLIENT), rate, interval and
              keep-alive, and for OVERALL the window {NAME}:value and
              {NAME}:permits: the permits an acquisition would find free
              now (those taken more than an interval ago count as free,
              capped by the rate as Redisson does), the permits taken in
              the window, and when the oldest of them frees. A PER_CLIENT
              limiter has one row per client whose keys
              {NAME}:value:<client id> and {NAME}:permits:<client id> a
              SCAN finds (at most 100), each with its own window. The
              window is the last interval on this host's clock; the
              permits were stamped by the takers' clocks.
  semaphore/latch
              the key is a string holding an integer and nothing else
              exists: an RSemaphore and an RCountDownLatch (and an
              expirable semaphore with no permit acquired) are stored just
              the same, so both readings are shown: that many free permits,
              or a latch with that count (open at 0). --kind tells which.
What does not look like a Redisson object (another key type, fields that do
not parse, keys of several kinds) is shown as far as it goes and explained
in notes below the table. A name with nothing under it is "none", not
locked: an open latch, or a semaphore never set up, looks the same. Waiting
clients tell them apart: inspect counts the connections subscribed to the
name's channels (PUBSUB NUMSUB and SHARDNUMSUB, on every node), and a name
with nothing under it, or a counter, that clients wait on as a semaphore
shows as a semaphore (with no permits, say, and its waiters); as a latch,
as a latch. Names longer than 64 bytes are shortened in the table, with
their length; --json has them whole. A
multi-lock (run with several LOCKs, Redisson's RedissonMultiLock) has no
keys of its own: inspect each of its locks by name.

Flags:
` + redisconn.FlagHelp + cli.NamePrefixHelp + `  --json             print one JSON object per name, one per line, instead
                     of a table: name, kind, locked, ttl_ms, mode, holders
                     (field, client_id, owner_id, write, holds,
                     read_hold_ttl_ms, stale), queue (position, owner,
                     client_id, owner_id, deadline_ms, deadline,
                     remaining_ms, stale), fence_token, permits (free
                     permits), count (a latch's), acquired (id, expiry_ms,
                     lease_left_ms, expired), rate_limiter (type, rate,
                     interval_ms, keep_alive_ms, overall or clients:
                     client_id, free_permits, stored_free, taken,
                     acquisitions, next_free_ms, value_ttl_ms,
                     permits_ttl_ms), key_type, subscribers
                     (connections waiting on its channels), notes. TTLs are
                     milliseconds: -1 no expiry, -2 (read holds) gone;
                     lease_left_ms is -1 for no expiry and 0 once expired.
                     A semaphore/latch has both permits and count.
  --kind KIND        what a string key holding an integer is: semaphore,
                     expirable-semaphore or latch. With it, a name with
                     nothing under it shows as that kind (no permits, or an
                     open latch). Locks, and expirable semaphores with
                     acquired permits, are told apart without it.

Exit status: 0 when every name was inspected (whatever it holds), 64 for an
unusable name or --kind, 69 when Redis fails.
`
