-- fair_transfer: release the owner's last hold of a fair lock by passing
-- the lock to the next owner when that owner heads the queue, idempotently
-- per request.
-- interlock's own script (Redisson has none). Its effects are those of
-- Redisson 3.32.0 .. 4.7.0 RedissonFairLock's unlock followed at once by
-- the queue head's acquire (tryLockInnerAsync): the head leaves the queue
-- and every remaining deadline moves ARGV[9] earlier. Java clients see the
-- lock held throughout; nothing is deleted or published. When the next
-- owner is not the head (after stale heads are dropped), the lock is
-- released as fair_unlock does and the head is sent the message.
--
-- KEYS[1]  lock hash            N
-- KEYS[2]  waiter queue         redisson_lock_queue:{N}
-- KEYS[3]  waiter deadlines     redisson_lock_timeout:{N}
-- KEYS[4]  channel prefix       redisson_lock__channel:{N}
-- KEYS[5]  unlock latch         redisson_unlock_latch:{N}:<32 hex request id>
-- ARGV[1]  message              "0"
-- ARGV[2]  lease in ms          TTL to keep while holds remain
-- ARGV[3]  owner                <client uuid>:<owner id>
-- ARGV[4]  now                  the caller's clock, epoch ms
-- ARGV[5]  publish command      PUBLISH or SPUBLISH
-- ARGV[6]  latch TTL in ms
-- ARGV[7]  next owner           <client uuid>:<owner id>
-- ARGV[8]  next lease in ms     (the watchdog timeout when none was given)
-- ARGV[9]  next owner's wait    in ms, as it queued with it
--
-- Returns as fair_unlock does (nil, 0, 1, or 2 when the lock did not
-- exist), or {2, 0} when the last hold went to the next owner. A replay
-- with the same latch key returns the first outcome without touching
-- anything else.
local done = redis.call('get', KEYS[5])
if done ~= false then
    if done == '2:0' then
        return {2, 0}
    end
    return tonumber(done)
end

while true do
    local head = redis.call('lindex', KEYS[2], 0)
    if head == false then
        break
    end
    local deadline = redis.call('zscore', KEYS[3], head)
    if deadline == false or tonumber(deadline) > tonumber(ARGV[4]) then
        break
    end
    redis.call('zrem', KEYS[3], head)
    redis.call('lpop', KEYS[2])
end

if redis.call('exists', KEYS[1]) == 0 then
    local head = redis.call('lindex', KEYS[2], 0)
    if head ~= false then
        redis.call(ARGV[5], KEYS[4] .. ':' .. head, ARGV[1])
    end
    redis.call('set', KEYS[5], 2, 'px', ARGV[6])
    return 2
end

if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return nil
end
if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    redis.call('set', KEYS[5], 0, 'px', ARGV[6])
    return 0
end
redis.call('del', KEYS[1])
local head = redis.call('lindex', KEYS[2], 0)
if head == ARGV[7] then
    redis.call('lpop', KEYS[2])
    redis.call('zrem', KEYS[3], ARGV[7])
    local waiting = redis.call('zrange', KEYS[3], 0, -1)
    for i = 1, #waiting do
        redis.call('zincrby', KEYS[3], -tonumber(ARGV[9]), waiting[i])
    end
    redis.call('hset', KEYS[1], ARGV[7], 1)
    redis.call('pexpire', KEYS[1], ARGV[8])
    redis.call('set', KEYS[5], '2:0', 'px', ARGV[6])
    return {2, 0}
end
redis.call('set', KEYS[5], 1, 'px', ARGV[6])
if head ~= false then
    redis.call(ARGV[5], KEYS[4] .. ':' .. head, ARGV[1])
end
return 1
