-- rl_available: the permits a rate limiter has free now.
-- Matches Redisson 3.52.0 .. 4.7.0 RedissonRateLimiter.availablePermitsAsync
-- (the script is the same in both versions).
--
-- KEYS[1..5] as rl_acquire
-- ARGV[1]  now                  the caller's clock, ms since the epoch
--
-- A missing free count is set to the rate (with no TTL, as in Redisson).
-- Else the zset's entries older than now - interval are dropped and their
-- permits added to the free count, uncapped, as in Redisson. Returns the
-- free count. Errors as rl_acquire's. Idempotent for one ARGV: a resend
-- finds nothing more to drop, so it is sent as retryable.
local cfg = redis.call('hmget', KEYS[1], 'rate', 'interval', 'type')
if cfg[1] == false or cfg[2] == false or cfg[3] == false then
    return redis.error_reply('ERR RateLimiter is not initialized')
end
local rate, interval = tonumber(cfg[1]), tonumber(cfg[2])
if rate == nil or interval == nil or (cfg[3] ~= '0' and cfg[3] ~= '1') then
    return redis.error_reply('ERR interlock: ' .. KEYS[1] .. ' holds no rate limiter config')
end
local free, taken = KEYS[2], KEYS[4]
if cfg[3] == '1' then
    free, taken = KEYS[3], KEYS[5]
end
local left = redis.call('get', free)
if left == false then
    redis.call('set', free, cfg[1])
    return rate
end
left = tonumber(left)
if left == nil then
    return redis.error_reply('ERR interlock: ' .. free .. ' holds no permit count')
end
local cut = tonumber(ARGV[1]) - interval
local back = 0
for _, m in ipairs(redis.call('zrangebyscore', taken, 0, cut)) do
    back = back + struct.unpack('<I4', m, string.byte(m, 1) + 2)
end
if back > 0 then
    redis.call('zremrangebyscore', taken, 0, cut)
    left = left + back
    redis.call('set', free, left)
end
return left
