-- latch_delete: delete a count-down latch.
-- Matches Redisson 3.52.0 .. 4.7.0 RedissonCountDownLatch.deleteAsync.
--
-- KEYS[1]  count                N
-- KEYS[2]  channel              redisson_countdownlatch__channel__{N}
-- ARGV[1]  message              "1" (closes the latch; wakes nobody)
-- ARGV[2]  publish command      PUBLISH or SPUBLISH
--
-- Returns 1 when N existed: it is deleted and "1" published. Returns 0
-- when it did not: nothing is published. Not idempotent in its reply:
-- never retried automatically.
if redis.call('del', KEYS[1]) == 1 then
    redis.call(ARGV[2], KEYS[2], ARGV[1])
    return 1
end
return 0
