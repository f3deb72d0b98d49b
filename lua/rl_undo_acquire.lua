-- rl_undo_acquire: give back one acquisition whose reply may have been lost.
-- Redisson has no such script; its effect is that of removing the
-- acquisition's zset member and of RedissonRateLimiter.releaseAsync(p)
-- (free count raised by p, at most to the rate), done at most once per
-- receipt.
--
-- KEYS[1..5] as rl_acquire
-- KEYS[6]  receipt              the one rl_acquire was called with
-- ARGV[1]  permits              p, as acquired
-- ARGV[2]  random bytes         r, as rl_acquire was sent them
-- ARGV[3]  receipt TTL in ms
--
-- Returns 1 when the receipt recorded a grant whose member is still in the
-- window: the member leaves the zset, the free count rises by p (capped at
-- the rate) and the receipt becomes "u". Returns 0 otherwise. A missing
-- receipt becomes "u" too, so an rl_acquire with it that arrives later
-- takes nothing. Idempotent: safe to retry.
local seen = redis.call('get', KEYS[6])
redis.call('set', KEYS[6], 'u', 'px', ARGV[3])
if seen ~= '1' then
    return 0
end
local cfg = redis.call('hmget', KEYS[1], 'rate', 'type')
local rate = tonumber(cfg[1])
if rate == nil then
    return 0
end
local free, taken = KEYS[2], KEYS[4]
if cfg[2] == '1' then
    free, taken = KEYS[3], KEYS[5]
end
local member = string.char(#ARGV[2]) .. ARGV[2] .. struct.pack('<I4', tonumber(ARGV[1]))
if redis.call('zrem', taken, member) == 0 then
    return 0
end
local left = tonumber(redis.call('get', free))
if left ~= nil then
    local ttl = redis.call('pttl', free)
    left = math.min(left + tonumber(ARGV[1]), rate)
    if ttl > 0 then
        redis.call('set', free, left, 'px', ttl)
    else
        redis.call('set', free, left)
    end
end
return 1
