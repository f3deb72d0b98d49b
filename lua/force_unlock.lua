-- force_unlock: delete a reentrant lock whoever holds it.
-- Matches Redisson 3.22.0 .. 4.7.0 RedissonLock.forceUnlockAsync.
--
-- KEYS[1]  lock hash            N
-- KEYS[2]  channel              redisson_lock__channel:{N}
-- ARGV[1]  message              "0"
-- ARGV[2]  publish command      PUBLISH or SPUBLISH
--
-- Returns 1 when a lock was deleted (and the message published), else 0.
if redis.call('del', KEYS[1]) == 1 then
    redis.call(ARGV[2], KEYS[2], ARGV[1])
    return 1
end
return 0
