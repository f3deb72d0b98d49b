-- fair_undo_acquire: take back a fair-lock acquisition whose reply was lost.
-- interlock's own script (Redisson has none); its effects are those of a
-- fair unlock, so Java clients see nothing unusual.
--
-- KEYS[1]  lock hash            N
-- KEYS[2]  waiter queue         redisson_lock_queue:{N}
-- KEYS[3]  waiter deadlines     redisson_lock_timeout:{N}
-- KEYS[4]  channel prefix       redisson_lock__channel:{N}
-- ARGV[1]  message              "0"
-- ARGV[2]  owner                <client uuid>:<owner id>
-- ARGV[3]  expected hold count  the count the lost acquisition would have made
-- ARGV[4]  publish command      PUBLISH or SPUBLISH
-- ARGV[5]  now                  the caller's clock, epoch ms
--
-- First drops stale heads, as fair_acquire does.
--
-- Returns 1 when the owner's count equalled ARGV[3] and one hold was taken
-- back (when none remain, the lock is deleted and the queue's head, if any,
-- is sent the message on KEYS[4] .. ':' .. head), else 0: the acquisition
-- never ran or did not acquire, and nothing changes. A lost acquisition
-- that queued the owner is undone by fair_acquire_failed.
while true do
    local head = redis.call('lindex', KEYS[2], 0)
    if head == false then
        break
    end
    local deadline = redis.call('zscore', KEYS[3], head)
    if deadline == false or tonumber(deadline) > tonumber(ARGV[5]) then
        break
    end
    redis.call('zrem', KEYS[3], head)
    redis.call('lpop', KEYS[2])
end

local count = tonumber(redis.call('hget', KEYS[1], ARGV[2]))
if count == nil or count ~= tonumber(ARGV[3]) then
    return 0
end
if count > 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], -1)
    return 1
end
redis.call('del', KEYS[1])
local head = redis.call('lindex', KEYS[2], 0)
if head ~= false then
    redis.call(ARGV[4], KEYS[4] .. ':' .. head, ARGV[1])
end
return 1
