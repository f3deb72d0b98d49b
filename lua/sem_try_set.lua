-- sem_try_set: create a semaphore with p free permits if it does not exist.
-- Matches Redisson 3.52.0 .. 4.7.0 RedissonSemaphore.trySetPermitsAsync
-- (both forms) and RedissonPermitExpirableSemaphore.trySetPermitsAsync.
--
-- KEYS[1]  free-permit count    N
-- KEYS[2]  channel              redisson_sc:{N}
-- ARGV[1]  permits              p
-- ARGV[2]  publish command      PUBLISH or SPUBLISH
-- ARGV[3]  TTL in ms (optional) N expires after it
--
-- Returns 1 when N was missing: it is set to p (with the TTL if given) and
-- p is published. Returns 0 when N exists: nothing is written or
-- published. Not idempotent in its reply: never retried automatically.
if redis.call('get', KEYS[1]) ~= false then
    return 0
end
if ARGV[3] ~= nil then
    redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[3])
else
    redis.call('set', KEYS[1], ARGV[1])
end
redis.call(ARGV[2], KEYS[2], ARGV[1])
return 1
