-- leader_acquire: take or re-enter an election's fenced lock, hand out a
-- fencing token, and record the new leader's value.
-- The lock and the counter change as Redisson 3.19.0 .. 4.7.0
-- RedissonFencedLock.lockAndGetToken changes them; the value key is
-- interlock's own, unknown to Redisson, and lives exactly as long as the
-- leader's hold (leader_renew renews both, leader_unlock deletes both).
--
-- KEYS[1]  lock hash            N
-- KEYS[2]  token counter        redisson_lock_token:{N} (no TTL, only ever incremented)
-- KEYS[3]  value key            interlock_leader:{N}: hash owner, token, value
-- ARGV[1]  lease in ms          (the watchdog timeout: leaders hold by watchdog)
-- ARGV[2]  owner                <client uuid>:<owner id>
-- ARGV[3]  value                the candidate's value (any bytes)
--
-- Returns {-1, token} when acquired (the counter incremented, the lock's
-- TTL and the value key's set to the lease), else {pttl, -1}: the holder's
-- PTTL in ms and no token; a failed acquisition changes nothing.
-- Not idempotent (INCR, HINCRBY): never retried automatically.
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    local token = redis.call('incr', KEYS[2])
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    redis.call('del', KEYS[3])
    redis.call('hset', KEYS[3], 'owner', ARGV[2], 'token', token, 'value', ARGV[3])
    redis.call('pexpire', KEYS[3], ARGV[1])
    return {-1, token}
end
return {redis.call('pttl', KEYS[1]), -1}
