-- nr_acquire: take a non-reentrant lock (RNonReentrantLock).
-- Matches Redisson 4.4.0 .. 4.7.0 RedissonNonReentrantLock.tryLockInnerAsync.
--
-- KEYS[1]  lock hash            N
-- ARGV[1]  lease in ms          (the watchdog timeout when no lease was given)
-- ARGV[2]  owner                <client uuid>:<owner id>
-- ARGV[3]  re-entry token       NON_REENTRANT_REACQUIRE
--
-- acquire.lua without re-entry. Returns nil when acquired (the lock was
-- free), the error reply "ERR <ARGV[3]>" when the owner already holds it
-- (nothing changes), else the holder's PTTL in ms (-1: no expiry).
-- Not idempotent (a resend after success would answer the error): never
-- retried automatically.
if redis.call('exists', KEYS[1]) == 0 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    return redis.error_reply('ERR ' .. ARGV[3])
end
return redis.call('pttl', KEYS[1])
