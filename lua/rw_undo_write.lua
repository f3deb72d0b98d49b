-- rw_undo_write: take back a write acquisition whose reply was lost.
-- interlock's own script (Redisson has none); its effects are those of a
-- write unlock (rw_write_unlock without the latch), so Java clients see
-- nothing unusual.
--
-- KEYS[1]  lock hash            N
-- KEYS[2]  channel              redisson_rwlock:{N}
-- ARGV[1]  message              "1"
-- ARGV[2]  writer               <client uuid>:<owner id>:write
-- ARGV[3]  expected hold count  the count the lost acquisition would have made
-- ARGV[4]  publish command      PUBLISH or SPUBLISH
--
-- Returns 1 when the writer's count equalled ARGV[3] and that hold was
-- taken back, else 0: the acquisition never ran, and nothing changes.
local count = tonumber(redis.call('hget', KEYS[1], ARGV[2]))
if count == nil or count ~= tonumber(ARGV[3]) then
    return 0
end
if count > 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], -1)
    return 1
end
redis.call('hdel', KEYS[1], ARGV[2])
if redis.call('hlen', KEYS[1]) == 1 then
    redis.call('del', KEYS[1])
    redis.call(ARGV[4], KEYS[2], ARGV[1])
else
    redis.call('hset', KEYS[1], 'mode', 'read')
end
return 1
