-- latch_try_set: create a count-down latch with count c if it does not exist.
-- Matches Redisson 3.52.0 .. 4.7.0 RedissonCountDownLatch.trySetCountAsync.
--
-- KEYS[1]  count                N
-- KEYS[2]  channel              redisson_countdownlatch__channel__{N}
-- ARGV[1]  message              "1" (closes the latch; wakes nobody)
-- ARGV[2]  count                c
-- ARGV[3]  publish command      PUBLISH or SPUBLISH
--
-- Returns 1 when N was missing: it is set to c and "1" published. Returns
-- 0 when N exists: nothing changes. Not idempotent in its reply: never
-- retried automatically.
if redis.call('exists', KEYS[1]) == 1 then
    return 0
end
redis.call('set', KEYS[1], ARGV[2])
redis.call(ARGV[3], KEYS[2], ARGV[1])
return 1
