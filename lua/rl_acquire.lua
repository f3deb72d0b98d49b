-- rl_acquire: take permits of a rate limiter if its window has them free.
-- Matches Redisson 3.52.0 .. 4.7.0 RedissonRateLimiter.tryAcquireAsync(permits)
-- (the script is the same in both versions).
--
-- KEYS[1]  config hash          N: rate, interval (ms), type (0 overall, 1 per client), keepAliveTime (ms)
-- KEYS[2]  free permits         {N}:value
-- KEYS[3]  free, this client    {N}:value:<client id>
-- KEYS[4]  taken permits, zset  {N}:permits
-- KEYS[5]  taken, this client   {N}:permits:<client id>
-- KEYS[6]  receipt (optional)   interlock_receipt:{N}:<op id>
-- ARGV[1]  permits              p >= 1
-- ARGV[2]  now                  the caller's clock, ms since the epoch
-- ARGV[3]  random bytes         r, 16 raw bytes (the receipt's id when there is one)
-- ARGV[4]  receipt TTL in ms    (with KEYS[6] only)
--
-- Type 1 (per client) uses KEYS[3] and KEYS[5] instead of KEYS[2] and KEYS[4].
-- Members of the zset are byte(#r) .. r .. p as 4 bytes little-endian,
-- scored with now. Entries older than now - interval are dropped and their
-- permits freed. Returns nil when p permits were taken (the zset gains the
-- member, the free count drops by p); else the ms to wait until the oldest
-- entry leaves the window (3 + interval - (now - its score)), and nothing
-- but the freeing changes. Then, with keepAliveTime > 0 all three keys
-- expire after it; else the free count and zset take the config's TTL, if
-- it has one.
--
-- An unset config is the error "RateLimiter is not initialized", p above
-- the rate "Requested permits amount cannot exceed defined rate" (both
-- Redisson's texts), before anything changes. A config or count that is no
-- rate limiter's is an error reply that says so.
-- With a receipt, a resend after a grant returns nil and changes nothing; a
-- receipt rl_undo_acquire marked makes it a no-op that returns 0. Without
-- a receipt this is Redisson's script and is not idempotent.
local cfg = redis.call('hmget', KEYS[1], 'rate', 'interval', 'type', 'keepAliveTime')
if cfg[1] == false or cfg[2] == false or cfg[3] == false then
    return redis.error_reply('ERR RateLimiter is not initialized')
end
local rate, interval = tonumber(cfg[1]), tonumber(cfg[2])
if rate == nil or interval == nil or (cfg[3] ~= '0' and cfg[3] ~= '1') then
    return redis.error_reply('ERR interlock: ' .. KEYS[1] .. ' holds no rate limiter config')
end
local want = tonumber(ARGV[1])
if want > rate then
    return redis.error_reply('ERR Requested permits amount cannot exceed defined rate')
end
local receipt = KEYS[6]
if receipt ~= nil then
    local seen = redis.call('get', receipt)
    if seen == '1' then
        return nil
    elseif seen ~= false then
        return 0
    end
end
local free, taken = KEYS[2], KEYS[4]
if cfg[3] == '1' then
    free, taken = KEYS[3], KEYS[5]
end
local now = tonumber(ARGV[2])

-- the permits of the entries in [lo, hi] of the zset, by score
local function sum(lo, hi)
    local n = 0
    for _, m in ipairs(redis.call('zrangebyscore', taken, lo, hi)) do
        n = n + struct.unpack('<I4', m, string.byte(m, 1) + 2)
    end
    return n
end

local member = string.char(#ARGV[3]) .. ARGV[3] .. struct.pack('<I4', want)
local left = redis.call('get', free)
local res = nil
if left == false then
    redis.call('set', free, rate)
    left = rate
else
    left = tonumber(left)
    if left == nil then
        return redis.error_reply('ERR interlock: ' .. free .. ' holds no permit count')
    end
    local cut = now - interval
    local back = sum(0, cut)
    if back > 0 then
        redis.call('zremrangebyscore', taken, 0, cut)
        if left + back > rate then
            left = rate - sum('-inf', '+inf')
        else
            left = left + back
        end
        redis.call('set', free, left)
    end
end
if left < want then
    local first = redis.call('zrange', taken, 0, 0, 'withscores')
    if first[2] ~= nil then
        res = 3 + interval - (now - tonumber(first[2]))
    else
        res = 3 -- a short count with nothing in the window: look again soon
    end
else
    redis.call('zadd', taken, ARGV[2], member)
    redis.call('decrby', free, want)
    if receipt ~= nil then
        redis.call('set', receipt, '1', 'px', ARGV[4])
    end
end

local keep = tonumber(cfg[4])
if keep ~= nil and keep > 0 then
    redis.call('pexpire', KEYS[1], keep)
    redis.call('pexpire', free, keep)
    redis.call('pexpire', taken, keep)
else
    local ttl = redis.call('pttl', KEYS[1])
    if ttl > 0 then
        redis.call('pexpire', free, ttl)
        redis.call('pexpire', taken, ttl)
    end
end
return res
