-- fair_unlock: release one hold of a fair lock, idempotently per request,
-- and wake the waiter whose turn it is.
-- Matches Redisson 3.32.0 .. 4.7.0 RedissonFairLock.unlockInnerAsync, except
-- the reply (and latch value) when the lock does not exist: see below.
--
-- KEYS[1]  lock hash            N
-- KEYS[2]  waiter queue         redisson_lock_queue:{N}
-- KEYS[3]  waiter deadlines     redisson_lock_timeout:{N}
-- KEYS[4]  channel prefix       redisson_lock__channel:{N}  (the head's
--                               channel is KEYS[4] .. ':' .. <head owner>)
-- KEYS[5]  unlock latch         redisson_unlock_latch:{N}:<32 hex request id>
-- ARGV[1]  message              "0"
-- ARGV[2]  lease in ms          TTL to keep while holds remain
-- ARGV[3]  owner                <client uuid>:<owner id>
-- ARGV[4]  now                  the caller's clock, epoch ms
-- ARGV[5]  publish command      PUBLISH or SPUBLISH
-- ARGV[6]  latch TTL in ms
--
-- First drops stale heads, as fair_acquire does.
--
-- Returns nil when the lock exists but the owner holds nothing (nothing
-- changes), 0 when a hold was released and others remain, 1 when the lock
-- was released (the queue's head, if any, is sent the message), and 2 when
-- the lock did not exist at all (expired, or never taken): the head, if
-- any, is sent the message and latch 2 is written. Redisson answers 1 and
-- writes latch 1 in that last case; the effect on keys and channels is
-- the same. A replay with the same latch key returns the first outcome
-- without touching anything else.
local done = redis.call('get', KEYS[5])
if done ~= false then
    return tonumber(done)
end

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

if redis.call('exists', KEYS[1]) == 0 then
    local head = redis.call('lindex', KEYS[2], 0)
    if head ~= false then
        redis.call(ARGV[5], KEYS[4] .. ':' .. head, ARGV[1])
    end
    redis.call('set', KEYS[5], 2, 'px', ARGV[6])
    return 2
end

if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return nil
end
if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    redis.call('set', KEYS[5], 0, 'px', ARGV[6])
    return 0
end
redis.call('del', KEYS[1])
redis.call('set', KEYS[5], 1, 'px', ARGV[6])
local head = redis.call('lindex', KEYS[2], 0)
if head ~= false then
    redis.call(ARGV[5], KEYS[4] .. ':' .. head, ARGV[1])
end
return 1
