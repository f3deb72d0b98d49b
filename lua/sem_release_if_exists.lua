-- sem_release_if_exists: give permits to a semaphore only if it exists.
-- Matches Redisson 4.1.0 .. 4.7.0 RedissonSemaphore.releaseIfExistsAsync.
--
-- KEYS[1]  free-permit count    N
-- KEYS[2]  channel              redisson_sc:{N}
-- KEYS[3]  receipt (optional)   interlock_receipt:{N}:<op id>
-- ARGV[1]  permits              p >= 1
-- ARGV[2]  publish command      PUBLISH or SPUBLISH
-- ARGV[3]  receipt TTL in ms    (with KEYS[3] only)
--
-- Returns 0 when N does not exist (nothing changes, nothing is published),
-- else 1: N is incremented by p and the new free count published. With a
-- receipt that already exists, returns the first outcome and changes
-- nothing; without one this is Redisson's script.
local receipt = KEYS[3]
if receipt ~= nil then
    local seen = redis.call('get', receipt)
    if seen ~= false then
        return tonumber(seen)
    end
end
if redis.call('exists', KEYS[1]) == 0 then
    if receipt ~= nil then
        redis.call('set', receipt, '0', 'px', ARGV[3])
    end
    return 0
end
local free = redis.call('incrby', KEYS[1], ARGV[1])
redis.call(ARGV[2], KEYS[2], free)
if receipt ~= nil then
    redis.call('set', receipt, '1', 'px', ARGV[3])
end
return 1
