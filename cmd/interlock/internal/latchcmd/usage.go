package latchcmd

import (
	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"
)

// usage is the help of "interlock latch".
const usage = `Usage: interlock latch init [flags] NAME N
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
last look at the count finds it still closed. A wait that lasts more than 3s
says once, on stderr, the latch's count and which 'interlock inspect' shows
it.

A NAME whose key holds anything but an integer (a lock's hash, a string, an
expirable semaphore...) is refused with exit 64 before anything changes.

Flags:
` + redisconn.FlagHelp + cli.NamePrefixHelp + `  --wait D           await: give up after D and exit 75 if the latch is still
                     closed; 0 looks once. Default: wait until it opens or
                     interlock gets SIGINT or SIGTERM (exit 128+N).

Exit status: 0 on success (await: the latch is open), 1 when init found the
latch already set, 64 for bad arguments (a negative count) or a name whose
key holds another type of data or no integer, 69 when Redis fails, 75 when
await's --wait ran out.
`
