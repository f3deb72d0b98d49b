package doctor

import "github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"

// usage is the help of "interlock doctor".
const usage = `Usage: interlock doctor [flags]

Checks a live Redis, node by node on a cluster (every master and replica
that CLUSTER NODES lists), for what silently breaks locks, and explains
each finding: what it means for locks and what to do. It only reads.

  server            the server (Redis or Valkey), its version and uptime
  clients           connections (CLIENT LIST tells who they are)
  maxmemory-policy  a policy that can evict lock keys before they expire:
                    volatile-* (every held lock has a TTL) or allkeys-*;
                    noeviction is safe
  replication       replicas under asynchronous replication, with the lag
                    of each (master_repl_offset minus its offset): a
                    failover can lose locks unless the applications wait
                    for replicas (WithReplicaAcks, WithReplicaSync;
                    Redisson's checkLockSyncedSlaves)
  failover          a master that was promoted from a replica
  busy-reply-threshold
                    lua-time-limit: when the server starts answering BUSY
                    to every command while a long script runs
  persistence       no AOF and no RDB save points: fencing tokens and
                    semaphore permits restart with the server
  clock             this host's clock against the server's TIME, to within
                    half a round trip
  acl               whether the user may run what each kind needs (the
                    Minimal ACL of docs/operations.md), checked without
                    running it (redis.acl_check_cmd, or ACL DRYRUN)
  pubsub            sharded pub/sub (SSUBSCRIBE, Redis 7+ and Valkey)
  cluster           cluster_state and slot coverage (of 16384), masters
                    without replicas, failing nodes
  access            commands doctor itself was refused (CONFIG, INFO, ...),
                    and what it checked instead

A user refused CONFIG is fine: doctor reads INFO instead (maxmemory-policy,
AOF) and says what it could not check (RDB save points,
busy-reply-threshold).

Each finding has a severity: ok; info (worth knowing, nothing wrong);
warn (locks work, but some failures or surprises are likely); hazard (can
silently break mutual exclusion: an evicting policy, replicas without
waiting for them); error (a node that cannot be reached, a cluster that is
down, slots without a master).

Flags:
` + redisconn.FlagHelp + `  --json             print the report as one JSON object: deployment
                     (standalone, cluster, sentinel, or nodes for several
                     servers),
                     name, nodes (addr, role, master, server, version,
                     reachable), findings (check, node, severity, summary,
                     meaning, action, skipped, facts), worst, exit_status.
                     A finding's node is "" for the whole cluster.
  --name NAME        the lock name whose keys and channels the ACL check
                     uses, as Redis sees it (with a Java fleet's prefix).
                     Default interlock:doctor; give one of the
                     applications' names to check their key patterns.
  --acl-user USER    check USER's permissions instead of the connected
                     user's (needs ACL DRYRUN, an admin command).
  --wait-replicas    the applications wait for replicas (WithReplicaAcks or
                     WithReplicaSync; Redisson's checkLockSyncedSlaves):
                     replication is then a warning, not a hazard.

Exit status: the worst finding's. 0 when every finding is ok or info, 1
for a warning, 2 for a hazard, 69 for an error (and when Redis cannot be
reached at all), 64 for bad flags.
`
