-- rw_write_unlock: release one write hold, idempotently per request.
-- Matches Redisson 3.44.0 .. 4.7.0 RedissonWriteLock.unlockInnerAsync.
--
-- KEYS[1]  lock hash            N
-- KEYS[2]  channel              redisson_rwlock:{N}
-- KEYS[3]  unlock latch         redisson_unlock_latch:{N}:<32 hex request id>
-- ARGV[1]  message              "1"
-- ARGV[2]  lease in ms          TTL to keep while write holds remain
-- ARGV[3]  writer               <client uuid>:<owner id>:write
-- ARGV[4]  publish command      PUBLISH or SPUBLISH
-- ARGV[5]  latch TTL in ms
--
-- On the last write hold: when the writer holds no read hold, the lock is
-- deleted and "1" published (every waiter may try: readers can all
-- enter); when it does, the lock becomes a read lock (a downgrade) and
-- nothing is published.
--
-- Returns nil when the writer holds nothing (nothing changes; when the
-- lock does not exist at all "1" is published, as Redisson does, and
-- latch -1 written, so that a resend reads "not held" back where
-- Redisson writes 1 and reports success), 0 when write holds remain, 1 when the last write hold
-- was released. A replay with the same latch key returns the first outcome
-- without touching the lock.
local done = redis.call('get', KEYS[3])
if done ~= false then
    if tonumber(done) < 0 then
        return nil
    end
    return tonumber(done)
end
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
    redis.call(ARGV[4], KEYS[2], ARGV[1])
    redis.call('set', KEYS[3], -1, 'px', ARGV[5])
    return nil
end
if mode ~= 'write' or redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return nil
end
if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    redis.call('set', KEYS[3], 0, 'px', ARGV[5])
    return 0
end
redis.call('hdel', KEYS[1], ARGV[3])
if redis.call('hlen', KEYS[1]) == 1 then
    redis.call('del', KEYS[1])
    redis.call(ARGV[4], KEYS[2], ARGV[1])
else
    redis.call('hset', KEYS[1], 'mode', 'read')
end
redis.call('set', KEYS[3], 1, 'px', ARGV[5])
return 1
