-- leader_renew: extend many election leaders' holds of one cluster slot in
-- one call, each with its value key.
-- The locks change as Redisson 3.44.0 .. 4.7.0 renewal.LockTask changes
-- them; the value keys are interlock's own.
--
-- KEYS[1], KEYS[3], ..., KEYS[2k-1]  lock hashes   L1 .. Lk (all in one slot)
-- KEYS[2], KEYS[4], ..., KEYS[2k]    value keys    interlock_leader:{Li}, after Li
-- ARGV[1]      lease in ms      the watchdog timeout
-- ARGV[i+1]    owners           Oi is the holder of Li
--
-- Returns an array of k integers: 1 when Oi still holds Li (its TTL was
-- set to the lease, and its value key's, when the key is Oi's), 0 when it
-- does not (nothing changed).
-- Idempotent: safe to retry.
local renewed = {}
for i = 1, #ARGV - 1 do
    local lock, value, owner = KEYS[2 * i - 1], KEYS[2 * i], ARGV[i + 1]
    if redis.call('hexists', lock, owner) == 1 then
        redis.call('pexpire', lock, ARGV[1])
        if redis.call('hget', value, 'owner') == owner then
            redis.call('pexpire', value, ARGV[1])
        end
        renewed[i] = 1
    else
        renewed[i] = 0
    end
end
return renewed
