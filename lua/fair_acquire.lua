-- fair_acquire: take, re-enter or queue for a fair lock (the waiting variant).
-- Matches Redisson 3.45.0 .. 4.7.0 RedissonFairLock.tryLockInnerAsync with
-- EVAL_LONG (lock(), tryLock(wait, ...)); 3.32.0 .. 3.44.x lack only the
-- guard on the last waiter's score, which changes nothing in a sane queue.
-- With ARGV[5], 4.4.0 .. 4.7.0 RedissonNonReentrantFairLock's.
--
-- KEYS[1]  lock hash            N
-- KEYS[2]  waiter queue         redisson_lock_queue:{N}    (list of owners)
-- KEYS[3]  waiter deadlines     redisson_lock_timeout:{N}  (zset owner -> epoch ms)
-- ARGV[1]  lease in ms          (the watchdog timeout when no lease was given)
-- ARGV[2]  owner                <client uuid>:<owner id>
-- ARGV[3]  wait in ms           grace each waiter gets after the one before it
-- ARGV[4]  now                  the caller's clock, epoch ms
-- ARGV[5]  re-entry token       (non-reentrant only) NON_REENTRANT_REACQUIRE
--
-- First drops stale heads: while the queue's head has a deadline <= now,
-- it is removed from both the queue and the zset.
--
-- Returns nil when acquired: the lock was free and the queue empty or
-- headed by the owner (who leaves the queue; every remaining deadline moves
-- ARGV[3] earlier), or the owner re-entered. Otherwise the owner is queued
-- (once) and the reply is a wait hint in ms: for an owner already queued,
-- the lock's PTTL, or 0 when it has none (free, another owner's turn); for
-- a new waiter, the time until the previous waiter's deadline (or the
-- lock's PTTL when the queue was empty), which is also what its own
-- deadline adds ARGV[3] and now to. With ARGV[5], a re-entry is refused
-- instead with the error reply "ERR <ARGV[5]>", before the owner is queued.
-- Not idempotent (HINCRBY, RPUSH): never retried automatically.
while true do
    local head = redis.call('lindex', KEYS[2], 0)
    if head == false then
        break
    end
    local deadline = redis.call('zscore', KEYS[3], head)
    if deadline == false or tonumber(deadline) > tonumber(ARGV[4]) then
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
        redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), waiting[i])
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

if redis.call('zscore', KEYS[3], ARGV[2]) ~= false then
    local pttl = redis.call('pttl', KEYS[1])
    if pttl < 0 then
        return 0
    end
    return pttl
end

local last = redis.call('lindex', KEYS[2], -1)
local ttl
local lastDeadline = false
if last ~= false and last ~= ARGV[2] then
    lastDeadline = redis.call('zscore', KEYS[3], last)
end
if lastDeadline ~= false then
    ttl = tonumber(lastDeadline) - tonumber(ARGV[4])
else
    ttl = redis.call('pttl', KEYS[1])
end
local deadline = ttl + tonumber(ARGV[3]) + tonumber(ARGV[4])
if redis.call('zadd', KEYS[3], deadline, ARGV[2]) == 1 then
    redis.call('rpush', KEYS[2], ARGV[2])
end
return ttl
