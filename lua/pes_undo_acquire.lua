-- pes_undo_acquire: take back one expirable acquisition whose reply may
-- have been lost, or that too few replicas acknowledged. Redisson has no
-- such script; its effect is tryReleaseAsync(ids) of the ids just acquired
-- (the undo Redisson runs when replicas did not acknowledge), done at most
-- once per receipt.
--
-- KEYS[1]  free-permit count    N
-- KEYS[2]  channel              redisson_sc:{N}
-- KEYS[3]  leased permits       {N}:timeout
-- KEYS[4]  receipt              the one pes_acquire was called with
-- ARGV[1]  permits              k, the number of ids
-- ARGV[2]  publish command      PUBLISH or SPUBLISH
-- ARGV[3]  receipt TTL in ms
-- ARGV[4..3+k]  permit ids      16 raw bytes each, as acquired
--
-- Returns how many permits it gave back. When the receipt records the
-- acquisition, the ids still in the zset are removed, N grows by their
-- number, which is published, and the receipt becomes "u". A missing receipt becomes
-- "u" too, so a pes_acquire with it that arrives later takes nothing.
-- Idempotent: safe to retry.
local seen = redis.call('get', KEYS[4])
if seen == false then
    redis.call('set', KEYS[4], 'u', 'px', ARGV[3])
    return 0
end
if seen ~= '1' then
    return 0
end
local k = tonumber(ARGV[1])
local removed = 0
for i = 4, 3 + k do
    removed = removed + redis.call('zrem', KEYS[3], ARGV[i])
end
if removed > 0 then
    redis.call('incrby', KEYS[1], removed)
    redis.call(ARGV[2], KEYS[2], removed)
end
redis.call('set', KEYS[4], 'u', 'px', ARGV[3])
return removed
