-- sem_drain: take every free permit of a semaphore.
-- Matches Redisson 3.52.0 .. 4.7.0 RedissonSemaphore.drainPermitsAsync.
--
-- KEYS[1]  free-permit count    N
-- ARGV[1]  none                 (the script takes no arguments)
--
-- Returns the integer 0 when N is missing, else N's old value as a bulk
-- string, after setting N to 0 with a plain SET (which drops any TTL).
-- Publishes nothing. Not idempotent: never retried automatically.
-- A count that is no integer is answered with a WRONGTYPE error reply,
-- before anything changes.
local free = redis.call('get', KEYS[1])
if free == false then
    return 0
end
if tonumber(free) == nil then
    return redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' holds no integer')
end
redis.call('set', KEYS[1], '0')
return free
