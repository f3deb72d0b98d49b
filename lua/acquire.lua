-- acquire: take or re-enter a reentrant lock (RLock, fenced lock hash).
-- Matches Redisson 3.24.0 .. 4.7.0 RedissonLock.tryLockInnerAsync.
--
-- KEYS[1]  lock hash            N
-- ARGV[1]  lease in ms          (the watchdog timeout when no lease was given)
-- ARGV[2]  owner                <client uuid>:<owner id>
--
-- Returns nil when acquired (first entry or re-entry; the TTL is reset to
-- the lease either way), else the holder's PTTL in ms (-1: no expiry).
-- Not idempotent (HINCRBY): never retried automatically.
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
return redis.call('pttl', KEYS[1])
