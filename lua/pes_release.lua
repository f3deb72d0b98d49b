-- pes_release: hand back k expirable permits by id, all or none.
-- Matches Redisson 3.52.0 .. 4.7.0 RedissonPermitExpirableSemaphore.tryReleaseAsync(ids).
--
-- KEYS[1]  free-permit count    N
-- KEYS[2]  channel              redisson_sc:{N}
-- KEYS[3]  leased permits       {N}:timeout
-- KEYS[4]  receipt (optional)   interlock_receipt:{N}:<op id>
-- ARGV[1]  count                k
-- ARGV[2]  now                  the caller's clock in epoch ms
-- ARGV[3]  publish command      PUBLISH or SPUBLISH
-- ARGV[4..3+k]  permit ids      16 raw bytes each
-- ARGV[4+k]  receipt TTL in ms  (with KEYS[4] only)
--
-- Returns 0 and changes nothing when any id is missing or expired (score
-- <= now). Otherwise reclaims every expired permit, removes the ids, adds
-- the number removed r to N, publishes r and returns it (r < k only for
-- duplicate ids). Idempotent (a resend finds the ids gone): safe to retry.
-- A receipt makes a resend answer what the first send did.
local receipt = KEYS[4]
if receipt ~= nil then
    local seen = redis.call('get', receipt)
    if seen ~= false then
        return tonumber(seen)
    end
end
local now = tonumber(ARGV[2])
local k = tonumber(ARGV[1])
for i = 4, 3 + k do
    local expiry = redis.call('zscore', KEYS[3], ARGV[i])
    if expiry == false or tonumber(expiry) <= now then
        if receipt ~= nil then
            redis.call('set', receipt, 0, 'px', ARGV[4 + k])
        end
        return 0
    end
end
local expired = redis.call('zrangebyscore', KEYS[3], '0', ARGV[2], 'limit', '0', '-1')
if #expired > 0 then
    for i = 1, #expired, 4000 do
        redis.call('zrem', KEYS[3], unpack(expired, i, math.min(i + 3999, #expired)))
    end
    local back = redis.call('incrby', KEYS[1], #expired)
    if back > 0 then
        redis.call(ARGV[3], KEYS[2], back)
    end
end
local removed = 0
for i = 4, 3 + k, 4000 do
    removed = removed + redis.call('zrem', KEYS[3], unpack(ARGV, i, math.min(i + 3999, 3 + k)))
end
redis.call('incrby', KEYS[1], removed)
redis.call(ARGV[3], KEYS[2], removed)
if receipt ~= nil then
    redis.call('set', receipt, removed, 'px', ARGV[4 + k])
end
return removed
