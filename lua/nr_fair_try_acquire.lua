-- nr_fair_try_acquire: take a non-reentrant fair lock, never queueing (the
-- single-attempt variant; RNonReentrantFairLock).
-- Matches Redisson 4.4.0 .. 4.7.0 RedissonNonReentrantFairLock.tryLockInnerAsync
-- with EVAL_NULL_BOOLEAN (tryLock() without arguments).
--
-- KEYS[1]  lock hash            N
-- KEYS[2]  waiter queue         redisson_lock_queue:{N}
-- KEYS[3]  waiter deadlines     redisson_lock_timeout:{N}
-- ARGV[1]  lease in ms          (the watchdog timeout when no lease was given)
-- ARGV[2]  owner                <client uuid>:<owner id>
-- ARGV[3]  now                  the caller's clock, epoch ms
-- ARGV[4]  wait in ms           how much earlier the remaining deadlines move
--                               when the queue's head acquires
-- ARGV[5]  re-entry token       NON_REENTRANT_REACQUIRE
--
-- fair_try_acquire.lua without re-entry. Returns nil when acquired, the
-- error reply "ERR <ARGV[5]>" when the owner already holds the lock
-- (nothing changes beyond the stale heads dropped first), else 1. The
-- owner is never queued.
-- Not idempotent (HSET): never retried automatically.
while true do
    local head = redis.call('lindex', KEYS[2], 0)
    if head == false then
        break
    end
    local deadline = redis.call('zscore', KEYS[3], head)
    if deadline == false or tonumber(deadline) > tonumber(ARGV[3]) then
        break
    end
    redis.call('zrem', KEYS[3], head)
    redis.call('lpop', KEYS[2])
end

if redis.call('exists', KEYS[1]) == 0
    and (redis.call('exists', KEYS[2]) == 0 or redis.call('lindex', KEYS[2], 0) == ARGV[2]) then
    redis.call('lpop', KEYS[2])
    redis.call('zrem', KEYS[3], ARGV[2])
    local waiting = redis.call('zrange', KEYS[3], 0, -1)
    for i = 1, #waiting do
        redis.call('zincrby', KEYS[3], -tonumber(ARGV[4]), waiting[i])
    end
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end

if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    return redis.error_reply('ERR ' .. ARGV[5])
end
return 1
