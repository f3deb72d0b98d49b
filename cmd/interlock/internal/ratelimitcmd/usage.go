package ratelimitcmd

import (
	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"
)

// usage is the help of "interlock ratelimit".
const usage = `Usage: interlock ratelimit set [flags] [--per-client] [--keep-alive D]
                     [--if-unset] NAME RATE INTERVAL
       interlock ratelimit acquire [flags] [--permits N] [--wait D] NAME

The rate limiter NAME is Redisson's RRateLimiter of that name
(getRateLimiter(NAME)): RATE permits per INTERVAL, a sliding window over the
takers' clocks, shared by every Go and Java client.

set makes NAME's config RATE permits (a positive integer) per INTERVAL (a
duration such as 1s or 500ms, whole milliseconds, at least 1ms), counted for
all clients together (OVERALL) or, with --per-client, for each client on its
own (PER_CLIENT). It converges: a limiter with no rate is set as by
trySetRate; one already set to exactly this is left alone, its window going
on (exit 0); one set otherwise is replaced as by setRate, which forgets the
permits taken so far (a PER_CLIENT limiter's are kept: setRate forgets only
its caller's, and interlock is a client of its own). With --if-unset it only
sets a limiter with no rate, as trySetRate, and exits 1, changing nothing,
when another config is there.

acquire takes N permits (--permits, default 1), as acquire(N): it waits as
long as the limiter says they take to come free, until it gets them or
interlock gets SIGINT or SIGTERM (exit 128+N). With --wait D it gives up and
exits 75 as soon as the permits would come free only after D, as
tryAcquire(N, D). It prints what it took. Permits taken are never given
back: they leave the window an INTERVAL after they were taken. A limiter
that is not set exits 1; N above the rate, or a PER_CLIENT limiter (each
interlock process is a client of its own, so its permits would limit
nothing but itself), exits 64, taking nothing. A wait that lasts more than
3s says once, on stderr, the free permits and which 'interlock inspect'
shows them.

A NAME whose key holds anything but a rate limiter's config (a lock, a
counter, a hash of other fields, fields that do not parse), or whose
{NAME}:value or {NAME}:permits holds another type, is refused with exit 64
before anything changes. 'interlock run --kind ratelimit' takes permits for
a command; 'interlock inspect NAME' shows the config and the window.

Flags:
` + redisconn.FlagHelp + cli.NamePrefixHelp + `  --per-client       set: the rate counts for each client on its own
                     (PER_CLIENT). Default: OVERALL, for all together.
  --keep-alive D     set: the limiter's keys expire after D without an
                     acquisition; at least INTERVAL. Default: no expiry.
  --if-unset         set: only if the limiter has no rate (trySetRate);
                     exit 1 when it has another.
  --permits N        acquire: the permits to take, from 1 to the rate.
                     Default 1.
  --wait D           acquire: give up and exit 75 when the permits are not
                     free within D; 0 tries once. Default: wait until they
                     are.

Exit status: 0 on success (set: also when the config was already that), 1
when set --if-unset found another config, or acquire a limiter that is not
set, 64 for bad arguments (RATE not a positive integer, INTERVAL under 1ms,
--keep-alive under INTERVAL, --permits above the rate) or a name whose keys
hold other data, 69 when Redis fails, 75 when acquire's --wait ran out.
`
