-- latch_count_down: decrement a count-down latch, opening it at zero.
-- Matches Redisson 3.52.0 .. 4.7.0 RedissonCountDownLatch.countDownAsync.
--
-- KEYS[1]  count                N
-- KEYS[2]  channel              redisson_countdownlatch__channel__{N}
-- KEYS[3]  receipt (optional)   interlock_receipt:{N}:<op id>
-- ARGV[1]  message              "0" (opens the latch; wakes every waiter)
-- ARGV[2]  publish command      PUBLISH or SPUBLISH
-- ARGV[3]  receipt TTL in ms    (with KEYS[3] only)
--
-- Returns nil. N is decremented; at 0 or below it is deleted, and "0" is
-- published when it reached exactly 0 (a missing N goes to -1: deleted,
-- nothing published). With a receipt that already exists nothing changes;
-- without one this is Redisson's script and is not idempotent.
local receipt = KEYS[3]
if receipt ~= nil and redis.call('exists', receipt) == 1 then
    return nil
end
local count = redis.call('decr', KEYS[1])
if count <= 0 then
    redis.call('del', KEYS[1])
end
if count == 0 then
    redis.call(ARGV[2], KEYS[2], ARGV[1])
end
if receipt ~= nil then
    redis.call('set', receipt, '1', 'px', ARGV[3])
end
return nil
