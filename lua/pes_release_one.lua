-- pes_release_one: hand back one expirable permit by id.
-- Matches Redisson 3.52.0 .. 4.7.0 RedissonPermitExpirableSemaphore.tryReleaseAsync(id).
--
-- KEYS[1]  free-permit count    N
-- KEYS[2]  channel              redisson_sc:{N}
-- KEYS[3]  leased permits       {N}:timeout
-- KEYS[4]  receipt (optional)   interlock_receipt:{N}:<op id>
-- ARGV[1]  permit id            16 raw bytes
-- ARGV[2]  permits              1
-- ARGV[3]  now                  the caller's clock in epoch ms
-- ARGV[4]  publish command      PUBLISH or SPUBLISH
-- ARGV[5]  receipt TTL in ms    (with KEYS[4] only)
--
-- Returns 0 when the id is not in the zset (nothing changes). Otherwise
-- the id is removed, N incremented and the new free count published; the
-- reply is then 1, or 0 when the permit had already expired (score <= now:
-- it was given back all the same). No reclaim: no other permit is touched.
-- Idempotent (the ZREM guards the increment): safe to retry. A receipt
-- makes a resend answer what the first send did.
local receipt = KEYS[4]
if receipt ~= nil then
    local seen = redis.call('get', receipt)
    if seen ~= false then
        return tonumber(seen)
    end
end
local function done(r)
    if receipt ~= nil then
        redis.call('set', receipt, r, 'px', ARGV[5])
    end
    return r
end
local expiry = redis.call('zscore', KEYS[3], ARGV[1])
if redis.call('zrem', KEYS[3], ARGV[1]) ~= 1 then
    return done(0)
end
local free = redis.call('incrby', KEYS[1], ARGV[2])
redis.call(ARGV[4], KEYS[2], free)
if tonumber(expiry) <= tonumber(ARGV[3]) then
    return done(0)
end
return done(1)
