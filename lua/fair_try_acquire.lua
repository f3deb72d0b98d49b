-- fair_try_acquire: take or re-enter a fair lock, never queueing (the
-- single-attempt variant).
-- Matches Redisson 3.32.0 .. 4.7.0 RedissonFairLock.tryLockInnerAsync with
-- EVAL_NULL_BOOLEAN (tryLock() without arguments); with ARGV[5], 4.4.0 ..
-- 4.7.0 RedissonNonReentrantFairLock's.
--
-- KEYS[1]  lock hash            N
-- KEYS[2]  waiter queue         redisson_lock_queue:{N}
-- KEYS[3]  waiter deadlines     redisson_lock_timeout:{N}
-- ARGV[1]  lease in ms          (the watchdog timeout when no lease was given)
-- ARGV[2]  owner                <client uuid>:<owner id>
-- ARGV[3]  now                  the caller's clock, epoch ms
-- ARGV[4]  wait in ms           how much earlier the remaining deadlines move
--                               when the queue's head acquires
-- ARGV[5]  re-entry token       (non-reentrant only) NON_REENTRANT_REACQUIRE
-- (ARGV[3] and ARGV[4] are in the opposite order to fair_acquire's, as in
-- Redisson.)
--
-- First drops stale heads, as fair_acquire does.
--
-- Returns nil when acquired (the lock was free and the queue empty or
-- headed by the owner, or the owner re-entered), else 1. The owner is
-- never queued. With ARGV[5], a re-entry is refused instead with the
-- error reply "ERR <ARGV[5]>".
-- Not idempotent (HINCRBY): never retried automatically.
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
    if ARGV[5] then
        return redis.error_reply('ERR ' .. ARGV[5])
    end
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
return 1
