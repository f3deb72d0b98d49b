-- leader_read: read an election's leader: the holder of its fenced lock,
-- the token counter and, when the holder recorded one, its value.
-- interlock's own read; it changes nothing. A holder that is a Redisson
-- RFencedLock or RLock client of the name has no value key: it is the
-- leader, with an empty value.
--
-- KEYS[1]  lock hash            N
-- KEYS[2]  token counter        redisson_lock_token:{N}
-- KEYS[3]  value key            interlock_leader:{N}
-- ARGV[1]  (none)
--
-- Returns {0} when nobody holds the lock, else {pttl, token, owner, value,
-- recorded}: the lock's PTTL in ms (-1: no expiry), the counter as a
-- decimal string ("0" when none was handed out), the holder's field, and
-- the value with recorded = 1 when the value key is that holder's of the
-- current token, else "" and 0 (a stale key left by a holder that was
-- force-unlocked).
-- Idempotent: safe to retry.
local pttl = redis.call('pttl', KEYS[1])
if pttl == -2 then
    return {0}
end
local owners = redis.call('hkeys', KEYS[1])
local owner = owners[1] or ''
local token = redis.call('get', KEYS[2]) or '0'
local v = redis.call('hmget', KEYS[3], 'owner', 'token', 'value')
if v[1] and v[2] and v[3] and redis.call('hexists', KEYS[1], v[1]) == 1 and v[2] == token then
    return {pttl, token, v[1], v[3], 1}
end
return {pttl, token, owner, '', 0}
