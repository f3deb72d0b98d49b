-- pes_permits: count all permits of an expirable semaphore, free and leased.
-- Matches Redisson 3.52.0 .. 4.7.0 RedissonPermitExpirableSemaphore.getPermitsAsync.
--
-- KEYS[1]  free-permit count    N
-- KEYS[2]  leased permits       {N}:timeout
-- KEYS[3]  channel              redisson_sc:{N}
-- ARGV[1]  now                  the caller's clock in epoch ms
-- ARGV[2]  publish command      PUBLISH or SPUBLISH
--
-- First reclaims every expired permit, as pes_available does. Returns 0
-- when N is missing, else N plus the number of leased permits.
-- Idempotent: safe to retry.
-- A count that is no integer is answered with a WRONGTYPE error reply,
-- before anything changes.
local expired = redis.call('zrangebyscore', KEYS[2], '0', ARGV[1], 'limit', '0', '-1')
local back = nil
if #expired > 0 then
    for i = 1, #expired, 4000 do
        redis.call('zrem', KEYS[2], unpack(expired, i, math.min(i + 3999, #expired)))
    end
    back = redis.call('incrby', KEYS[1], #expired)
    if back > 0 then
        redis.call(ARGV[2], KEYS[3], back)
    end
end
local free = redis.call('get', KEYS[1])
if free == false then
    return 0
end
if tonumber(free) == nil then
    return redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' holds no integer')
end
return tonumber(free) + redis.call('zcount', KEYS[2], '0', '+inf')
