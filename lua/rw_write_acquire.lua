-- rw_write_acquire: take or re-enter the write lock of a read/write lock.
-- Matches Redisson 3.44.0 .. 4.7.0 RedissonWriteLock.tryLockInnerAsync.
--
-- KEYS[1]  lock hash            N
-- ARGV[1]  lease in ms          (the watchdog timeout when no lease was given)
-- ARGV[2]  writer               <client uuid>:<owner id>:write
--
-- The write lock is granted when the lock is free, or re-entered when this
-- writer holds it. A re-entry adds the lease to the remaining TTL, as
-- Redisson does (a reentrant lock would reset it).
--
-- Returns nil when acquired, else the lock's PTTL in ms (-1: no expiry).
-- Not idempotent (HINCRBY): never retried automatically.
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
    redis.call('hset', KEYS[1], 'mode', 'write')
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    local left = redis.call('pttl', KEYS[1])
    redis.call('pexpire', KEYS[1], left + tonumber(ARGV[1]))
    return nil
end
return redis.call('pttl', KEYS[1])
