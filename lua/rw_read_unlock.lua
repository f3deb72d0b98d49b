-- rw_read_unlock: release one read hold, idempotently per request.
-- Matches Redisson 3.44.0 .. 4.7.0 RedissonReadLock.unlockInnerAsync.
--
-- KEYS[1]  lock hash            N
-- KEYS[2]  channel              redisson_rwlock:{N}
-- KEYS[3]  timeout key prefix   {N}:<owner>:rwlock_timeout
-- KEYS[4]  key prefix           {N} (N itself when N contains "{")
-- KEYS[5]  unlock latch         redisson_unlock_latch:{N}:<32 hex request id>
-- ARGV[1]  message              "0"
-- ARGV[2]  owner                <client uuid>:<owner id>
-- ARGV[3]  publish command      PUBLISH or SPUBLISH
-- ARGV[4]  latch TTL in ms
--
-- The released hold's timeout key is deleted. While other holds remain,
-- the hash's TTL becomes the longest remaining TTL of every holder's
-- timeout keys (a writer's field has none); when none of them is alive
-- and no writer holds the lock, the lock is deleted, as it is when the
-- last hold goes (this also clears the fields of dead readers).
--
-- Returns nil when the owner holds no read hold (nothing changes; when the
-- lock does not exist at all "0" is published, as Redisson does, and
-- latch -1 written, so that a resend reads "not held" back where
-- Redisson writes 1 and reports success), 0 when holds remain, 1 when the lock was deleted and
-- "0" published. A replay with the same latch key returns the first
-- outcome without touching the lock.
local done = redis.call('get', KEYS[5])
if done ~= false then
    if tonumber(done) < 0 then
        return nil
    end
    return tonumber(done)
end
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
    redis.call(ARGV[3], KEYS[2], ARGV[1])
    redis.call('set', KEYS[5], -1, 'px', ARGV[4])
    return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
    return nil
end
local left = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if left == 0 then
    redis.call('hdel', KEYS[1], ARGV[2])
end
redis.call('del', KEYS[3] .. ':' .. (left + 1))
if redis.call('hlen', KEYS[1]) > 1 then
    local longest = -3
    for _, field in ipairs(redis.call('hkeys', KEYS[1])) do
        local count = tonumber(redis.call('hget', KEYS[1], field))
        if count ~= nil then
            for k = count, 1, -1 do
                local ttl = redis.call('pttl', KEYS[4] .. ':' .. field .. ':rwlock_timeout:' .. k)
                longest = math.max(longest, ttl)
            end
        end
    end
    if longest > 0 then
        redis.call('pexpire', KEYS[1], longest)
        redis.call('set', KEYS[5], 0, 'px', ARGV[4])
        return 0
    end
    if mode == 'write' then
        redis.call('set', KEYS[5], 0, 'px', ARGV[4])
        return 0
    end
end
redis.call('del', KEYS[1])
redis.call(ARGV[3], KEYS[2], ARGV[1])
redis.call('set', KEYS[5], 1, 'px', ARGV[4])
return 1
