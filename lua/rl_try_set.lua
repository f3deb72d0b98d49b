-- rl_try_set: set a rate limiter's config unless it has one.
-- Matches Redisson 3.52.0 .. 4.7.0 RedissonRateLimiter.trySetRateAsync
-- (the script is the same in both versions).
--
-- KEYS[1]  config hash          N
-- ARGV[1]  rate                 permits per interval, >= 1
-- ARGV[2]  interval             ms, >= 1
-- ARGV[3]  type                 0 overall, 1 per client
-- ARGV[4]  keepAliveTime        ms; 0 for none, else >= interval
--
-- Each of the fields rate, interval, keepAliveTime and type is set only
-- where missing (HSETNX). Returns 1 when type was missing (the config is
-- new), and then N expires after keepAliveTime when it is > 0; else 0. Not
-- idempotent in its reply: never retried automatically.
redis.call('hsetnx', KEYS[1], 'rate', ARGV[1])
redis.call('hsetnx', KEYS[1], 'interval', ARGV[2])
redis.call('hsetnx', KEYS[1], 'keepAliveTime', ARGV[4])
local created = redis.call('hsetnx', KEYS[1], 'type', ARGV[3])
if created == 1 and tonumber(ARGV[4]) > 0 then
    redis.call('pexpire', KEYS[1], ARGV[4])
end
return created
