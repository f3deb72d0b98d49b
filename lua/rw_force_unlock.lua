-- rw_force_unlock: delete a read/write lock in one mode, whoever holds it.
-- Matches Redisson 3.22.0 .. 4.7.0 RedissonReadLock.forceUnlockAsync
-- (mode "read", message "0") and RedissonWriteLock.forceUnlockAsync (mode
-- "write", message "1").
--
-- KEYS[1]  lock hash            N
-- KEYS[2]  channel              redisson_rwlock:{N}
-- ARGV[1]  message              "0" (read) or "1" (write)
-- ARGV[2]  publish command      PUBLISH or SPUBLISH
-- ARGV[3]  mode                 "read" or "write"
--
-- Readers' timeout keys are left to expire, as in Redisson.
--
-- Returns 1 when the lock was in that mode and was deleted (and the message
-- published), else 0 and nothing changes.
if redis.call('hget', KEYS[1], 'mode') == ARGV[3] then
    redis.call('del', KEYS[1])
    redis.call(ARGV[2], KEYS[2], ARGV[1])
    return 1
end
return 0
