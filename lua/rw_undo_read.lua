-- rw_undo_read: take back a read acquisition whose reply was lost.
-- interlock's own script (Redisson has none); its effects are those of a
-- read unlock (rw_read_unlock without the latch), so Java clients see
-- nothing unusual.
--
-- KEYS[1]  lock hash            N
-- KEYS[2]  channel              redisson_rwlock:{N}
-- KEYS[3]  timeout key prefix   {N}:<owner>:rwlock_timeout
-- KEYS[4]  key prefix           {N} (N itself when N contains "{")
-- ARGV[1]  message              "0"
-- ARGV[2]  owner                <client uuid>:<owner id>
-- ARGV[3]  expected hold count  the count the lost acquisition would have made
-- ARGV[4]  publish command      PUBLISH or SPUBLISH
--
-- Returns 1 when the owner's read count equalled ARGV[3] and that hold was
-- taken back, else 0: the acquisition never ran, and nothing changes.
local count = tonumber(redis.call('hget', KEYS[1], ARGV[2]))
if count == nil or count ~= tonumber(ARGV[3]) then
    return 0
end
local mode = redis.call('hget', KEYS[1], 'mode')
if count > 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], -1)
else
    redis.call('hdel', KEYS[1], ARGV[2])
end
redis.call('del', KEYS[3] .. ':' .. count)
if redis.call('hlen', KEYS[1]) > 1 then
    local longest = -3
    for _, field in ipairs(redis.call('hkeys', KEYS[1])) do
        local n = tonumber(redis.call('hget', KEYS[1], field))
        if n ~= nil then
            for k = n, 1, -1 do
                longest = math.max(longest, redis.call('pttl', KEYS[4] .. ':' .. field .. ':rwlock_timeout:' .. k))
            end
        end
    end
    if longest > 0 then
        redis.call('pexpire', KEYS[1], longest)
        return 1
    end
    if mode == 'write' then
        return 1
    end
end
redis.call('del', KEYS[1])
redis.call(ARGV[4], KEYS[2], ARGV[1])
return 1
