-- fence_write: let writes through only with a fencing token no older than
-- any the resource admitted before; record the token and run the writes in
-- one atomic step.
-- interlock's own script: Redisson hands out tokens (fenced_acquire.lua)
-- but leaves checking them to the resource.
--
-- KEYS[1]     fence key        highest token admitted (a decimal string, no TTL)
-- KEYS[2..k]  data keys        every key the writes touch
-- ARGV[1]     token            a positive decimal integer, at most 20 digits
-- ARGV[2..]   writes, each     i, n, command, arg1 .. argn
--                              runs: command KEYS[i] arg1 .. argn (2 <= i <= k)
--
-- Returns {1, token} when the token is at least the recorded one (or none
-- is recorded): the token is recorded, then the writes run in order.
-- Returns {0, highest} when the token is older than the recorded highest:
-- nothing changes. Malformed arguments, or a fence key that holds no token,
-- give an error reply before anything changes. A write that fails (say,
-- WRONGTYPE) stops the script: the token and the writes before it stay, as
-- with MULTI/EXEC. On a cluster all keys must share one slot.
-- Not idempotent in general (a write may be INCRBY): never retried
-- automatically.

-- token reports whether s is a positive decimal integer with no leading zero.
local function token(s)
    return s ~= nil and #s <= 20 and string.match(s, '^[1-9][0-9]*$') ~= nil
end

-- older reports whether token a is below token b. Tokens have no leading
-- zeros, so a shorter one is smaller, and equal lengths compare digit by
-- digit (exact for any 64-bit value, unlike Lua's double-precision numbers).
local function older(a, b)
    if #a ~= #b then
        return #a < #b
    end
    for i = 1, #a do
        local x, y = string.byte(a, i), string.byte(b, i)
        if x ~= y then
            return x < y
        end
    end
    return false
end

if not token(ARGV[1]) then
    return redis.error_reply('ERR fence_write: the token must be a positive decimal integer')
end
local i = 2
while i <= #ARGV do
    local k, n = tonumber(ARGV[i]), tonumber(ARGV[i + 1])
    if k == nil or k % 1 ~= 0 or k < 2 or k > #KEYS or n == nil or n % 1 ~= 0 or n < 0 or i + 2 + n > #ARGV then
        return redis.error_reply('ERR fence_write: malformed write at ARGV[' .. i .. ']')
    end
    i = i + 3 + n
end

local highest = redis.call('get', KEYS[1])
if highest then
    if not token(highest) then
        return redis.error_reply('ERR fence_write: the fence key does not hold a token')
    end
    if older(ARGV[1], highest) then
        return {0, highest}
    end
end
redis.call('set', KEYS[1], ARGV[1])
i = 2
while i <= #ARGV do
    local n = tonumber(ARGV[i + 1])
    redis.call(ARGV[i + 2], KEYS[tonumber(ARGV[i])], unpack(ARGV, i + 3, i + 2 + n))
    i = i + 3 + n
end
return {1, ARGV[1]}
