-- fenced_acquire: take or re-enter a fenced lock and hand out a fencing token.
-- Matches Redisson 3.19.0 .. 4.7.0 RedissonFencedLock (lockAndGetToken,
-- tryLockAndGetToken, and its plain lock and tryLock, which run the same
-- logic and drop the token).
--
-- KEYS[1]  lock hash            N
-- KEYS[2]  token counter        redisson_lock_token:{N} (no TTL, only ever incremented)
-- ARGV[1]  lease in ms          (the watchdog timeout when no lease was given)
-- ARGV[2]  owner                <client uuid>:<owner id>
--
-- Returns {-1, token} when acquired (first entry or re-entry: every
-- acquisition increments the counter and resets the TTL to the lease),
-- else {pttl, -1}: the holder's PTTL in ms (-1: no expiry) and no token.
-- A failed acquisition leaves the counter alone.
-- Not idempotent (INCR, HINCRBY): never retried automatically.
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    local token = redis.call('incr', KEYS[2])
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {-1, token}
end
return {redis.call('pttl', KEYS[1]), -1}
