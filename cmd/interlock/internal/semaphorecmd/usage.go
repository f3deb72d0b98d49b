package semaphorecmd

import (
	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"
)

// usage is the help of "interlock semaphore".
const usage = `Usage: interlock semaphore init [flags] NAME N
       interlock semaphore add [flags] NAME N

init sets up the semaphore NAME with N free permits (0 or more), as
Redisson's trySetPermits(N): only if it is not set up already. It exits 1,
changing nothing, when the semaphore exists. With --ttl D the semaphore's key
expires after D, as trySetPermits(N, D), unless an add clears the TTL.

add adds N free permits, as addPermits(N), waking as many waiters; the
semaphore is created if it does not exist. A negative N takes permits away
(the free count may go below 0). It clears the semaphore's TTL. This is how
permits lost with a crashed holder of --kind semaphore are given back.

Either works on both kinds of semaphore, which share the key of free
permits; --kind expirable-semaphore makes add announce the permits as an
RPermitExpirableSemaphore does, for Java waiters on one. A NAME whose key
holds anything but an integer (a lock's hash, a string, a list...) is
refused with exit 64 before anything changes.

Flags:
` + redisconn.FlagHelp + cli.NamePrefixHelp + `  --kind KIND        semaphore (the default: RSemaphore) or
                     expirable-semaphore (RPermitExpirableSemaphore).
  --ttl D            init: the semaphore's key expires after D, at least 1ms.
                     Not for expirable-semaphore.

Exit status: 0 on success, 1 when init found the semaphore already set, 64
for bad arguments (N not an integer, init of a negative N, add of 0) or a
name whose key holds another type of data or no integer, 69 when Redis
fails.
`
