-- rl_set: set a rate limiter's config, replacing the one it has.
-- Matches Redisson 3.52.0 .. 4.7.0
-- RedissonRateLimiter.setRateAsync(type, rate, interval, keepAliveTime)
-- (the script is the same in both versions; 4.x's setRate(RateLimiterArgs)
-- is another script, not this one).
--
-- KEYS[1..5] as rl_acquire
-- ARGV[1..4] as rl_try_set
--
-- Sets the four fields; N expires after keepAliveTime when it is > 0 (an
-- existing TTL is otherwise kept). Then deletes the free count and zset
-- of the new type: {N}:value and {N}:permits for type 0, this client's
-- twins for type 1 (other clients' twins stay). Returns nothing. Not
-- idempotent (a resend would drop permits taken in between): never
-- retried automatically.
local free, taken = KEYS[2], KEYS[4]
if ARGV[3] == '1' then
    free, taken = KEYS[3], KEYS[5]
end
for i, field in ipairs({'rate', 'interval', 'type', 'keepAliveTime'}) do
    redis.call('hset', KEYS[1], field, ARGV[i])
end
if tonumber(ARGV[4]) > 0 then
    redis.call('pexpire', KEYS[1], ARGV[4])
end
redis.call('del', free, taken)
return nil
