package leader

import (
	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"
)

// usage is the help of "interlock leader".
const usage = `Usage: interlock leader [--redis URL] [--name-prefix P] [--value V]
                        [--watchdog-timeout D] [--grace D] NAME -- CMD [ARGS...]

Campaigns in the election NAME and runs CMD only while this process leads:
it waits until it holds the fenced lock NAME (Redisson's
RedissonClient.getFencedLock(NAME); a Java holder of it leads, and Java sees
this process as its holder), then runs CMD with stdin, stdout and stderr
passed through and, in its environment, INTERLOCK_LOCK=NAME,
INTERLOCK_FENCING_TOKEN (also as INTERLOCK_FENCE_TOKEN) set to the term's
fencing token, larger than every earlier term's, and INTERLOCK_LEADER_VALUE.
A wait that lasts more than 3s says once, on stderr, who leads meanwhile.
When CMD exits, interlock resigns, and a waiting candidate leads. The exit
status is CMD's: its exit code, or 128+N when a signal N killed it.

--value is what other candidates and observers read as this leader's value
(the Go election's Leader and Observe); by default host:pid. It lives in the
key interlock_leader:{NAME}, which expires with the lock.

While CMD runs, the watchdog renews the lock every third of
--watchdog-timeout. If leadership is lost while CMD runs (interlock was
paused or cut off for longer than --watchdog-timeout and the lock expired,
someone force-unlocked it), interlock sends SIGTERM to CMD, SIGKILL after
--grace, and exits 79. A CMD that writes to a shared resource should pass
the token with its writes, so that the resource refuses a deposed leader's
late writes (see package fenced). If interlock dies, another candidate leads
within --watchdog-timeout.

Flags:
  --value V          this leader's value, for Leader and Observe (default
                     host:pid)
  --watchdog-timeout D
                     the lease the watchdog renews while this process leads:
                     how long the lock outlives a dead or paused leader
                     (default 30s)
  --grace D          after SIGTERM on lost leadership, wait D for CMD to exit
                     before SIGKILL (default 10s)
` + redisconn.FlagHelp + cli.NamePrefixHelp + `
` + exit.Help
