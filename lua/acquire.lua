-- acquire: take or re-enter a reentrant lock (RLock, fenced lock hash), or
-- take a non-reentrant one.
-- Matches Redisson 3.24.0 .. 4.7.0 RedissonLock.tryLockInnerAsync and, with
-- ARGV[3], 4.4.0 .. 4.7.0 RedissonNonReentrantLock.tryLockInnerAsync.
--
-- KEYS[1]  lock hash            N
-- ARGV[1]  lease in ms          (the watchdog timeout when no lease was given)
-- ARGV[2]  owner                <client uuid>:<owner id>
-- ARGV[3]  re-entry token       (non-reentrant only) NON_REENTRANT_REACQUIRE
--
-- Returns nil when acquired (first entry or re-entry; the TTL is reset to
-- the lease either way), else the holder's PTTL in ms (-1: no expiry). With
-- ARGV[3], a re-entry is refused instead with the error reply
-- "ERR <ARGV[3]>", changing nothing.
-- Not idempotent (HINCRBY): never retried automatically.
if redis.call('exists', KEYS[1]) == 0 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    if ARGV[3] then
        return redis.error_reply('ERR ' .. ARGV[3])
    end
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
return redis.call('pttl', KEYS[1])
