-- pes_update_lease: set a new expiry on a live expirable permit.
-- Matches Redisson 3.52.0 .. 4.7.0 RedissonPermitExpirableSemaphore.updateLeaseTimeAsync.
--
-- KEYS[1]  free-permit count    N
-- KEYS[2]  leased permits       {N}:timeout
-- KEYS[3]  channel              redisson_sc:{N}
-- ARGV[1]  permit id            16 raw bytes
-- ARGV[2]  expiry               now + lease in epoch ms, or NEVER
-- ARGV[3]  now                  the caller's clock in epoch ms
-- ARGV[4]  publish command      PUBLISH or SPUBLISH
--
-- First reclaims every expired permit, as pes_available does, so an
-- expired permit cannot be extended. Returns 1 when the id is leased (its
-- score becomes the expiry), else 0. Idempotent: safe to retry.
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
if redis.call('zscore', KEYS[2], ARGV[1]) == false then
    return 0
end
redis.call('zadd', KEYS[2], ARGV[2], ARGV[1])
return 1
