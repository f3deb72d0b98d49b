-- pes_lease: read how long an expirable permit's lease has left.
-- Matches Redisson 3.52.0 .. 4.7.0 RedissonPermitExpirableSemaphore.getLeaseTimeAsync.
--
-- KEYS[1]  free-permit count    N
-- KEYS[2]  leased permits       {N}:timeout
-- KEYS[3]  channel              redisson_sc:{N}
-- ARGV[1]  permit id            16 raw bytes
-- ARGV[2]  NEVER                922337203685477
-- ARGV[3]  now                  the caller's clock in epoch ms
-- ARGV[4]  publish command      PUBLISH or SPUBLISH
--
-- First reclaims every expired permit, as pes_available does. Returns -1
-- for a permit that never expires, its expiry minus now in ms for another
-- leased permit, and 0 when the id is not leased (unknown or reclaimed).
-- Idempotent: safe to retry.
local expired = redis.call('zrangebyscore', KEYS[2], '0', ARGV[3], 'limit', '0', '-1')
local back = nil
if #expired > 0 then
    for i = 1, #expired, 4000 do
        redis.call('zrem', KEYS[2], unpack(expired, i, math.min(i + 3999, #expired)))
    end
    back = redis.call('incrby', KEYS[1], #expired)
    if back > 0 then
        redis.call(ARGV[4], KEYS[3], back)
    end
end
local expiry = redis.call('zscore', KEYS[2], ARGV[1])
if expiry == false then
    return 0
end
if tonumber(expiry) == tonumber(ARGV[2]) then
    return -1
end
return tonumber(expiry) - tonumber(ARGV[3])
