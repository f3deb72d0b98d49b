-- sem_add: add (or, when negative, remove) free permits of a semaphore.
-- Matches Redisson 3.52.0 .. 4.7.0 RedissonSemaphore.addPermitsAsync.
--
-- KEYS[1]  free-permit count    N
-- KEYS[2]  channel              redisson_sc:{N}
-- KEYS[3]  receipt (optional)   interlock_receipt:{N}:<op id>
-- ARGV[1]  delta                p, any sign
-- ARGV[2]  publish command      PUBLISH or SPUBLISH
-- ARGV[3]  receipt TTL in ms    (with KEYS[3] only)
--
-- Returns nil. N becomes (N or 0) + p with a plain SET, which drops any
-- TTL, and the new total (may be 0 or less) is published. With a receipt
-- that already exists nothing changes; without one this is Redisson's
-- script and is not idempotent.
-- A count that is no integer is answered with a WRONGTYPE error reply,
-- before anything changes.
local receipt = KEYS[3]
if receipt ~= nil and redis.call('exists', receipt) == 1 then
    return nil
end
local total = tonumber(redis.call('get', KEYS[1]) or 0)
if total == nil then
    return redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' holds no integer')
end
total = total + tonumber(ARGV[1])
redis.call('set', KEYS[1], total)
redis.call(ARGV[2], KEYS[2], total)
if receipt ~= nil then
    redis.call('set', receipt, '1', 'px', ARGV[3])
end
return nil
