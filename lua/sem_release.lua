-- sem_release: give permits to a semaphore and announce the new count.
-- Matches Redisson 3.52.0 .. 4.7.0 RedissonSemaphore.releaseAsync(permits).
--
-- KEYS[1]  free-permit count    N
-- KEYS[2]  channel              redisson_sc:{N}
-- KEYS[3]  receipt (optional)   interlock_receipt:{N}:<op id>
-- ARGV[1]  permits              p >= 1
-- ARGV[2]  publish command      PUBLISH or SPUBLISH
-- ARGV[3]  receipt TTL in ms    (with KEYS[3] only)
--
-- Returns nil. N is incremented by p (created if missing, TTL kept) and
-- the new free count, which may be 0 or less, is published on the channel.
-- With a receipt that already exists nothing changes, so a resend is
-- harmless; without one this is Redisson's script.
local receipt = KEYS[3]
if receipt ~= nil and redis.call('exists', receipt) == 1 then
    return nil
end
local free = redis.call('incrby', KEYS[1], ARGV[1])
redis.call(ARGV[2], KEYS[2], free)
if receipt ~= nil then
    redis.call('set', receipt, '1', 'px', ARGV[3])
end
return nil
