-- fair_force_unlock: delete a fair lock whoever holds it, and wake the
-- waiter whose turn it is.
-- Matches Redisson 3.32.0 .. 4.7.0 RedissonFairLock.forceUnlockAsync.
--
-- KEYS[1]  lock hash            N
-- KEYS[2]  waiter queue         redisson_lock_queue:{N}
-- KEYS[3]  waiter deadlines     redisson_lock_timeout:{N}
-- KEYS[4]  channel prefix       redisson_lock__channel:{N}
-- ARGV[1]  message              "0"
-- ARGV[2]  now                  the caller's clock, epoch ms
-- ARGV[3]  publish command      PUBLISH or SPUBLISH
--
-- First drops stale heads, as fair_acquire does.
--
-- Returns 1 when a lock was deleted (the queue's head, if any, is sent the
-- message on KEYS[4] .. ':' .. head), else 0. The queue is left alone.
-- Idempotent in effect (a repeat deletes nothing): safe to retry.
while true do
    local head = redis.call('lindex', KEYS[2], 0)
    if head == false then
        break
    end
    local deadline = redis.call('zscore', KEYS[3], head)
    if deadline == false or tonumber(deadline) > tonumber(ARGV[2]) then
        break
    end
    redis.call('zrem', KEYS[3], head)
    redis.call('lpop', KEYS[2])
end

if redis.call('del', KEYS[1]) == 1 then
    local head = redis.call('lindex', KEYS[2], 0)
    if head ~= false then
        redis.call(ARGV[3], KEYS[4] .. ':' .. head, ARGV[1])
    end
    return 1
end
return 0
