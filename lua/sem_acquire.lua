-- sem_acquire: take permits of a semaphore if enough are free.
-- Matches Redisson 3.52.0 .. 4.7.0 RedissonSemaphore.tryAcquireAsync(permits).
--
-- KEYS[1]  free-permit count    N
-- KEYS[2]  receipt (optional)   interlock_receipt:{N}:<op id>
-- ARGV[1]  permits              p >= 1
-- ARGV[2]  receipt TTL in ms    (with KEYS[2] only)
--
-- Returns 1 when p permits were taken (N decremented by p), else 0 and
-- nothing changes. A missing N has no free permits. With a receipt, a
-- resend returns the first outcome (1 only if that receipt took permits)
-- and changes nothing; a receipt left by sem_undo_acquire makes it a no-op.
-- Without a receipt this is Redisson's script and is not idempotent.
-- A count that is no integer is answered with a WRONGTYPE error reply,
-- before anything changes.
local receipt = KEYS[2]
if receipt ~= nil then
    local seen = redis.call('get', receipt)
    if seen ~= false then
        if seen == '1' then
            return 1
        end
        return 0
    end
end
local free = redis.call('get', KEYS[1])
if free == false then
    return 0
end
if tonumber(free) == nil then
    return redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' holds no integer')
end
if tonumber(free) < tonumber(ARGV[1]) then
    return 0
end
redis.call('decrby', KEYS[1], ARGV[1])
if receipt ~= nil then
    redis.call('set', receipt, '1', 'px', ARGV[2])
end
return 1
