-- undo_acquire: take back an acquisition whose reply was lost.
-- interlock's own script (Redisson has none); its effects are those of an
-- unlock, so Java clients see nothing unusual.
--
-- KEYS[1]  lock hash            N
-- KEYS[2]  channel              redisson_lock__channel:{N}
-- ARGV[1]  message              "0"
-- ARGV[2]  owner                <client uuid>:<owner id>
-- ARGV[3]  expected hold count  the count the lost acquisition would have made
-- ARGV[4]  publish command      PUBLISH or SPUBLISH
--
-- Returns 1 when the owner's count equalled ARGV[3] and one hold was taken
-- back (the lock deleted and the message published when none remain),
-- else 0: the acquisition never ran, and nothing changes.
local count = tonumber(redis.call('hget', KEYS[1], ARGV[2]))
if count == nil or count ~= tonumber(ARGV[3]) then
    return 0
end
if count > 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], -1)
    return 1
end
redis.call('del', KEYS[1])
redis.call(ARGV[4], KEYS[2], ARGV[1])
return 1
