package unlock

import (
	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"
)

// usage is the help of "interlock unlock".
const usage = `Usage: interlock unlock [flags] --force LOCK

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

Only a key shaped as a lock of that kind is deleted: a hash whose fields are
all "<client id>:<owner id>" with a hold count (and "mode" for a read/write
lock). Anything else under the name, such as an application's hash, a string,
a list or a semaphore's count, is refused (exit 64) and left as it is.

Flags:
` + redisconn.FlagHelp + cli.NamePrefixHelp + `  --force            required: confirms that breaking the lock is intended.
  --kind KIND        unlock LOCK as this kind of lock (reentrant, fair,
                     read, write, fenced) instead of the kind found; refused
                     when Redis plainly holds another kind.

Exit status: 0 when the lock is gone (whether or not it was locked), 1 when
it is still there because it is not locked as --kind says (a read/write lock
in the other mode), 64 without --force, for a bad --kind or for a key that is
no lock of that kind, 69 when Redis fails.
`
