-- pes_acquire: take p expirable permits under the given ids.
-- Matches Redisson 3.52.0 .. 4.7.0 RedissonPermitExpirableSemaphore.tryAcquireAsync.
--
-- KEYS[1]  free-permit count    N
-- KEYS[2]  leased permits       {N}:timeout (zset: id -> expiry in epoch ms)
-- KEYS[3]  channel              redisson_sc:{N}
-- KEYS[4]  receipt (optional)   interlock_receipt:{N}:<op id>
-- ARGV[1]  permits              p >= 1
-- ARGV[2]  expiry               now + lease in epoch ms, or NEVER
-- ARGV[3]  now                  the caller's clock in epoch ms
-- ARGV[4]  NEVER                922337203685477
-- ARGV[5]  publish command      PUBLISH or SPUBLISH
-- ARGV[6..5+p]  permit ids      16 raw bytes each
-- ARGV[6+p]  receipt TTL in ms  (with KEYS[4] only)
--
-- First reclaims up to p expired permits (score <= now) into N, publishing
-- the new free count if it is above 0. Returns "OK" when p permits were
-- taken: N is decremented, each id is added with the expiry, and N's TTL,
-- if any, is copied to the zset. Otherwise returns ":" .. the score of the
-- permit that expires first, or nil when none will (N missing, or only
-- NEVER permits out). With a receipt, a resend answers "OK" if the first
-- send took the permits and nil if pes_undo_acquire took them back, and
-- changes nothing: interlock always sends one, so rueidis may resend it.
-- Without one this is Redisson's script and is not idempotent.
-- A count that is no integer is answered with a WRONGTYPE error reply,
-- before anything changes.
local receipt = KEYS[4]
local p = tonumber(ARGV[1])
if receipt ~= nil then
    local seen = redis.call('get', receipt)
    if seen == '1' then
        return 'OK'
    elseif seen ~= false then
        return nil
    end
end
local now = ARGV[3]
local expired = redis.call('zrangebyscore', KEYS[2], '0', now, 'limit', '0', ARGV[1])
if #expired > 0 then
    for i = 1, #expired, 4000 do
        redis.call('zrem', KEYS[2], unpack(expired, i, math.min(i + 3999, #expired)))
    end
    local back = redis.call('incrby', KEYS[1], #expired)
    if back > 0 then
        redis.call(ARGV[5], KEYS[3], back)
    end
end
local free = redis.call('get', KEYS[1])
if free ~= false and tonumber(free) == nil then
    return redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' holds no integer')
end
if free ~= false and tonumber(free) >= p then
    redis.call('decrby', KEYS[1], ARGV[1])
    for i = 6, 5 + p do
        redis.call('zadd', KEYS[2], ARGV[2], ARGV[i])
    end
    local ttl = redis.call('pttl', KEYS[1])
    if ttl > 0 then
        redis.call('pexpire', KEYS[2], ttl)
    end
    if receipt ~= nil then
        redis.call('set', receipt, '1', 'px', ARGV[6 + p])
    end
    return 'OK'
end
local first = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES')
if first[2] ~= nil and tonumber(first[2]) ~= tonumber(ARGV[4]) then
    return ':' .. first[2]
end
return nil
