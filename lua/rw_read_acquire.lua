-- rw_read_acquire: take or re-enter the read lock of a read/write lock.
-- Matches Redisson 3.44.0 .. 4.7.0 RedissonReadLock.tryLockInnerAsync.
--
-- KEYS[1]  lock hash            N
-- KEYS[2]  timeout key prefix   {N}:<owner>:rwlock_timeout (hold k adds ":k")
-- ARGV[1]  lease in ms          (the watchdog timeout when no lease was given)
-- ARGV[2]  owner                <client uuid>:<owner id>
-- ARGV[3]  the owner as writer  <client uuid>:<owner id>:write
--
-- A read hold is granted when the lock is free, in read mode, or in write
-- mode held by this same owner (a writer may also read). Hold k of the
-- owner gets its own key KEYS[2]..":"..k = "1" with the hold's lease as its
-- TTL; the hash keeps the longest remaining TTL.
--
-- Returns nil when acquired, else the lock's PTTL in ms (-1: no expiry).
-- Not idempotent (HINCRBY): never retried automatically.
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
    redis.call('hset', KEYS[1], 'mode', 'read')
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('set', KEYS[2] .. ':1', 1)
    redis.call('pexpire', KEYS[2] .. ':1', ARGV[1])
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
if mode == 'read' or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
    local k = redis.call('hincrby', KEYS[1], ARGV[2], 1)
    local timeout = KEYS[2] .. ':' .. k
    redis.call('set', timeout, 1)
    redis.call('pexpire', timeout, ARGV[1])
    local left = redis.call('pttl', KEYS[1])
    redis.call('pexpire', KEYS[1], math.max(left, tonumber(ARGV[1])))
    return nil
end
return redis.call('pttl', KEYS[1])
