-- pes_available: count the free permits of an expirable semaphore.
-- Matches Redisson 3.52.0 .. 4.7.0 RedissonPermitExpirableSemaphore.availablePermitsAsync.
--
-- KEYS[1]  free-permit count    N
-- KEYS[2]  leased permits       {N}:timeout
-- KEYS[3]  channel              redisson_sc:{N}
-- ARGV[1]  now                  the caller's clock in epoch ms
-- ARGV[2]  publish command      PUBLISH or SPUBLISH
--
-- First reclaims every expired permit (score <= now) into N, publishing
-- the new free count if it is above 0. Returns that count as an integer
-- when something was reclaimed, else N as a bulk string, or the integer 0
-- when N is missing. Idempotent: safe to retry.
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
if back ~= nil then
    return back
end
local free = redis.call('get', KEYS[1])
if free == false then
    return 0
end
return free
