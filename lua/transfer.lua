-- transfer: release the owner's last hold of a reentrant or fenced lock by
-- passing the lock to the next owner, idempotently per request.
-- interlock's own script (Redisson has none). Its effects are those of
-- Redisson's unlock followed at once by the next owner's acquire
-- (RedissonLock.tryLockInnerAsync, or RedissonFencedLock's, which also
-- increments the token counter): Java clients see the lock held throughout,
-- and nothing is deleted or published. With ARGV[7] "1", when another
-- process subscribes to the channel (a waiter elsewhere), the last hold is
-- released as Redisson's unlock does instead: DEL and "0" published.
--
-- KEYS[1]  lock hash            N
-- KEYS[2]  unlock latch         redisson_unlock_latch:{N}:<32 hex request id>
-- KEYS[3]  channel              redisson_lock__channel:{N}
-- KEYS[4]  token counter        redisson_lock_token:{N} (a fenced lock only)
-- ARGV[1]  lease in ms          TTL to keep while the owner's holds remain
-- ARGV[2]  owner                <client uuid>:<owner id>
-- ARGV[3]  latch TTL in ms
-- ARGV[4]  next owner           <client uuid>:<owner id>
-- ARGV[5]  next lease in ms     (the watchdog timeout when none was given)
-- ARGV[6]  publish command      PUBLISH or SPUBLISH
-- ARGV[7]  yield                "1": release for real if the channel has
--                               more than one subscriber; "0": never
--
-- Returns nil when the owner holds nothing (nothing changes), 0 when a
-- hold was released and others remain, 3 when the lock was released for
-- another process's waiter, and {2, token} when the last hold went to the
-- next owner as one hold with the next lease: token is the counter's new
-- value, 0 without KEYS[4]. A replay with the same latch key returns the
-- first outcome without touching the lock.
local done = redis.call('get', KEYS[2])
if done ~= false then
    if done == '0' or done == '3' then
        return tonumber(done)
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
if ARGV[7] == '1' then
    local count = 'numsub'
    if ARGV[6] == 'SPUBLISH' then
        count = 'shardnumsub'
    end
    if redis.call('pubsub', count, KEYS[3])[2] > 1 then
        redis.call('del', KEYS[1])
        redis.call(ARGV[6], KEYS[3], '0')
        redis.call('set', KEYS[2], 3, 'px', ARGV[3])
        return 3
    end
end
redis.call('hdel', KEYS[1], ARGV[2])
local token = 0
if KEYS[4] ~= nil then
    token = redis.call('incr', KEYS[4])
end
redis.call('hset', KEYS[1], ARGV[4], 1)
redis.call('pexpire', KEYS[1], ARGV[5])
redis.call('set', KEYS[2], '2:' .. token, 'px', ARGV[3])
return {2, token}
