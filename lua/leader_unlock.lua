-- leader_unlock: resign: release one hold of an election's fenced lock,
-- idempotently per request, and delete the leader's value key with the
-- last hold.
-- The lock changes as Redisson 3.24.0 .. 4.7.0 RedissonLock.unlockInnerAsync
-- changes it, and the release publishes the same "0", so Java waiters of
-- the name wake as they would for a Java holder; the value key is
-- interlock's own.
--
-- KEYS[1]  lock hash            N
-- KEYS[2]  channel              redisson_lock__channel:{N}
-- KEYS[3]  unlock latch         redisson_unlock_latch:{N}:<32 hex request id>
-- KEYS[4]  value key            interlock_leader:{N}
-- ARGV[1]  message              "0"
-- ARGV[2]  lease in ms          TTL to keep while holds remain
-- ARGV[3]  owner                <client uuid>:<owner id>
-- ARGV[4]  publish command      PUBLISH or SPUBLISH
-- ARGV[5]  latch TTL in ms
--
-- Returns nil when the owner holds nothing (nothing changes), 0 when a
-- hold was released and others remain, 1 when the lock was released, the
-- value key deleted (if it was this owner's) and the message published.
-- A replay with the same latch key returns the first outcome.
local done = redis.call('get', KEYS[3])
if done ~= false then
    return tonumber(done)
end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return nil
end
if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    if redis.call('hget', KEYS[4], 'owner') == ARGV[3] then
        redis.call('pexpire', KEYS[4], ARGV[2])
    end
    redis.call('set', KEYS[3], 0, 'px', ARGV[5])
    return 0
end
redis.call('del', KEYS[1])
if redis.call('hget', KEYS[4], 'owner') == ARGV[3] then
    redis.call('del', KEYS[4])
end
redis.call(ARGV[4], KEYS[2], ARGV[1])
redis.call('set', KEYS[3], 1, 'px', ARGV[5])
return 1
