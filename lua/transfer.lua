-- transfer: release the owner's last hold of a reentrant or fenced lock by
-- passing the lock to the next owner, idempotently per request.
-- interlock's own script (Redisson has none). Its effects are those of
-- Redisson's unlock followed at once by the next owner's acquire
-- (RedissonLock.tryLockInnerAsync, or RedissonFencedLock's, which also
-- increments the token counter): Java clients see the lock held throughout,
-- and nothing is deleted or published.
--
-- KEYS[1]  lock hash            N
-- KEYS[2]  unlock latch         redisson_unlock_latch:{N}:<32 hex request id>
-- KEYS[3]  token counter        redisson_lock_token:{N} (a fenced lock only)
-- ARGV[1]  lease in ms          TTL to keep while the owner's holds remain
-- ARGV[2]  owner                <client uuid>:<owner id>
-- ARGV[3]  latch TTL in ms
-- ARGV[4]  next owner           <client uuid>:<owner id>
-- ARGV[5]  next lease in ms     (the watchdog timeout when none was given)
--
-- Returns nil when the owner holds nothing (nothing changes), 0 when a
-- hold was released and others remain, and {2, token} when the last hold
-- went to the next owner as one hold with the next lease: token is the
-- counter's new value, 0 without KEYS[3]. A replay with the same latch key
-- returns the first outcome without touching the lock.
local done = redis.call('get', KEYS[2])
if done ~= false then
    if done == '0' then
        return 0
    end
    return {2, tonumber(string.sub(done, 3))}
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
    return nil
end
if redis.call('hincrby', KEYS[1], ARGV[2], -1) > 0 then
    redis.call('pexpire', KEYS[1], ARGV[1])
    redis.call('set', KEYS[2], 0, 'px', ARGV[3])
    return 0
end
redis.call('hdel', KEYS[1], ARGV[2])
local token = 0
if KEYS[3] ~= nil then
    token = redis.call('incr', KEYS[3])
end
redis.call('hset', KEYS[1], ARGV[4], 1)
redis.call('pexpire', KEYS[1], ARGV[5])
redis.call('set', KEYS[2], '2:' .. token, 'px', ARGV[3])
return {2, token}
