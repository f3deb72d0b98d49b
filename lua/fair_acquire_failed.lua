-- fair_acquire_failed: take a waiter that gives up out of a fair lock's
-- queue.
-- Matches Redisson 4.7.0 RedissonFairLock.acquireFailedAsync (3.32.0 ..
-- 4.6.x have the same effect), plus one wake-up Redisson does not send:
-- see below.
--
-- KEYS[1]  waiter queue         redisson_lock_queue:{N}
-- KEYS[2]  waiter deadlines     redisson_lock_timeout:{N}
-- KEYS[3]  lock hash            N
-- KEYS[4]  channel prefix       redisson_lock__channel:{N}
-- ARGV[1]  owner                <client uuid>:<owner id>
-- ARGV[2]  wait in ms           the wait the owner queued with
-- ARGV[3]  message              "0"
-- ARGV[4]  publish command      PUBLISH or SPUBLISH
--
-- Every waiter queued behind the owner has its deadline moved ARGV[2]
-- earlier; the owner leaves the zset and the queue. If the owner was the
-- head, the lock is free and another waiter is now the head, that waiter
-- is sent the message on KEYS[4] .. ':' .. head: the release that made it
-- the owner's turn woke only the owner. (Redisson stops before this step,
-- and that waiter sleeps until its retry timer.)
--
-- Returns nil. Idempotent (a repeat finds the owner gone and changes
-- nothing): safe to retry, as Redisson 4.7.0 does.
local queue = redis.call('lrange', KEYS[1], 0, -1)
local at = 0
for i = 1, #queue do
    if queue[i] == ARGV[1] then
        at = i
        break
    end
end
if at > 0 then
    for i = at + 1, #queue do
        redis.call('zincrby', KEYS[2], -tonumber(ARGV[2]), queue[i])
    end
end
redis.call('zrem', KEYS[2], ARGV[1])
redis.call('lrem', KEYS[1], 0, ARGV[1])
if at == 1 then
    local head = redis.call('lindex', KEYS[1], 0)
    if head ~= false and redis.call('exists', KEYS[3]) == 0 then
        redis.call(ARGV[4], KEYS[4] .. ':' .. head, ARGV[3])
    end
end
return nil
