-- renew: extend many held locks of one cluster slot in one call.
-- Matches Redisson 3.44.0 .. 4.7.0 renewal.LockTask.
--
-- KEYS[1..k]  lock hashes       L1 .. Lk (all in one slot)
-- ARGV[1]     lease in ms       the watchdog timeout
-- ARGV[2..k+1] owners           Oi is the holder of Li
--
-- Returns an array of k integers: 1 when Oi still holds Li (its TTL was
-- set to the lease), 0 when it does not (nothing changed).
-- Idempotent: safe to retry.
local renewed = {}
for i = 1, #KEYS do
    if redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1 then
        redis.call('pexpire', KEYS[i], ARGV[1])
        renewed[i] = 1
    else
        renewed[i] = 0
    end
end
return renewed
