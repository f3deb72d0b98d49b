package demo

import "github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"

// usage is the help of "interlock demo".
const usage = `Usage: interlock demo [--redis URL] [--chart FILE]

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
` + redisconn.FlagHelp + `  --chart FILE       also write the scenes' timeline to FILE, an SVG image a
                     browser shows: for each holder, the lock's remaining TTL
                     as measured, and a flag per acquisition, renewal and
                     release, green when it succeeded, red when it failed.

Exit status: 0 when every scene ran as told, 1 when one did not, 64 for bad
flags, 69 when no Redis could be used, 130 on Ctrl-C.
`
