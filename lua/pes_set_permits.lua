-- pes_set_permits: make an expirable semaphore's total number of permits p.
-- Matches Redisson 3.52.0 .. 4.7.0 RedissonPermitExpirableSemaphore.setPermitsAsync.
--
-- KEYS[1]  free-permit count    N
-- KEYS[2]  channel              redisson_sc:{N}
-- KEYS[3]  leased permits       {N}:timeout
-- ARGV[1]  permits              p, the new total
-- ARGV[2]  publish command      PUBLISH or SPUBLISH
--
-- Returns nil. A missing N is set to p and p published. Otherwise the
-- total is N plus every permit in the zset (expired ones too: there is no
-- reclaim); when it is not p, N is moved by the difference and p
-- published. Idempotent: safe to retry.
-- A count that is no integer is answered with a WRONGTYPE error reply,
-- before anything changes.
local free = redis.call('get', KEYS[1])
if free == false then
    redis.call('set', KEYS[1], ARGV[1])
    redis.call(ARGV[2], KEYS[2], ARGV[1])
    return nil
end
if tonumber(free) == nil then
    return redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' holds no integer')
end
local total = tonumber(free) + redis.call('zcount', KEYS[3], '0', '+inf')
local want = tonumber(ARGV[1])
if total ~= want then
    redis.call('incrby', KEYS[1], want - total)
    redis.call(ARGV[2], KEYS[2], ARGV[1])
end
return nil
