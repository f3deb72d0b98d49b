-- keep: renews the TTL of each key that still exists (renewal.Keeper's batch).
-- KEYS[1..n]: the kept keys, all in one cluster slot.
-- ARGV[1]: the TTL to set, in milliseconds.
-- Returns: an array with 1 (renewed) or 0 (gone) per key, in KEYS order.
-- Redisson: none; interlock's own, for keys that are not locks.
local out = {}
for i, k in ipairs(KEYS) do
    out[i] = redis.call('pexpire', k, ARGV[1])
end
return out
