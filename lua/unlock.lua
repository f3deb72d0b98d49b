-- unlock: release one hold of a reentrant lock, idempotently per request.
-- Matches Redisson 3.24.0 .. 4.7.0 RedissonLock.unlockInnerAsync.
--
-- KEYS[1]  lock hash            N
-- KEYS[2]  channel              redisson_lock__channel:{N}
-- KEYS[3]  unlock latch         redisson_unlock_latch:{N}:<32 hex request id>
-- ARGV[1]  message              "0"
-- ARGV[2]  lease in ms          TTL to keep while holds remain
-- ARGV[3]  owner                <client uuid>:<owner id>
-- ARGV[4]  publish command      PUBLISH or SPUBLISH
-- ARGV[5]  latch TTL in ms
--
-- Returns nil when the owner holds nothing (nothing changes), 0 when a
-- hold was released and others remain, 1 when the lock was released and
-- the message published. A replay with the same latch key returns the
-- first outcome without touching the lock.
local done = redis.call('get', KEYS[3])
if done ~= false then
    return tonumber(done)
end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return nil
end
if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    redis.call('set', KEYS[3], 0, 'px', ARGV[5])
    return 0
end
redis.call('del', KEYS[1])
redis.call(ARGV[4], KEYS[2], ARGV[1])
redis.call('set', KEYS[3], 1, 'px', ARGV[5])
return 1
