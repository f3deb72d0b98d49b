-- rw_write_transfer: release the writer's last write hold by passing the
-- write lock to the next writer, idempotently per request.
-- interlock's own script (Redisson has none). Its effects are those of
-- Redisson 3.44.0 .. 4.7.0 RedissonWriteLock's unlock followed at once by
-- the next writer's acquire (tryLockInnerAsync): Java clients see the
-- write lock held throughout, and nothing is deleted or published. With
-- ARGV[7] "1", when another process subscribes to the channel (a waiter
-- elsewhere), the lock is released as Redisson's unlock does instead: DEL
-- and "1" published.
--
-- KEYS[1]  lock hash            N
-- KEYS[2]  unlock latch         redisson_unlock_latch:{N}:<32 hex request id>
-- KEYS[3]  channel              redisson_rwlock:{N}
-- ARGV[1]  lease in ms          TTL to keep while write holds remain
-- ARGV[2]  writer               <client uuid>:<owner id>:write
-- ARGV[3]  latch TTL in ms
-- ARGV[4]  next writer          <client uuid>:<owner id>:write
-- ARGV[5]  next lease in ms     (the watchdog timeout when none was given)
-- ARGV[6]  publish command      PUBLISH or SPUBLISH
-- ARGV[7]  yield                "1": release for real if the channel has
--                               more than one subscriber; "0": never
--
-- A writer that also holds read holds keeps them: its last write hold is
-- released as rw_write_unlock does (a downgrade) and nothing is passed on.
--
-- Returns nil when the writer holds no write hold (nothing changes), 0
-- when write holds remain, 1 after a downgrade, 3 when the lock was
-- released for another process's waiter, and {2, 0} when the write lock
-- went to the next writer as one hold with the next lease. A replay with
-- the same latch key returns the first outcome without touching the lock.
local done = redis.call('get', KEYS[2])
if done ~= false then
    if done == '2' then
        return {2, 0}
    end
    return tonumber(done)
end
if redis.call('hget', KEYS[1], 'mode') ~= 'write' or redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
    return nil
end
if redis.call('hincrby', KEYS[1], ARGV[2], -1) > 0 then
    redis.call('pexpire', KEYS[1], ARGV[1])
    redis.call('set', KEYS[2], 0, 'px', ARGV[3])
    return 0
end
redis.call('hdel', KEYS[1], ARGV[2])
if redis.call('hlen', KEYS[1]) > 1 then
    redis.call('hset', KEYS[1], 'mode', 'read')
    redis.call('set', KEYS[2], 1, 'px', ARGV[3])
    return 1
end
if ARGV[7] == '1' then
    local count = 'numsub'
    if ARGV[6] == 'SPUBLISH' then
        count = 'shardnumsub'
    end
    if redis.call('pubsub', count, KEYS[3])[2] > 1 then
        redis.call('del', KEYS[1])
        redis.call(ARGV[6], KEYS[3], '1')
        redis.call('set', KEYS[2], 3, 'px', ARGV[3])
        return 3
    end
end
redis.call('hset', KEYS[1], ARGV[4], 1)
redis.call('pexpire', KEYS[1], ARGV[5])
redis.call('set', KEYS[2], 2, 'px', ARGV[3])
return {2, 0}
