-- rw_extend_read: set a new lease on one owner's read holds (Extend).
-- Redisson has no public extend; this is the effect of its read renewal
-- (3.52.0's RedissonReadLock.renewExpirationAsync, 4.4.0 .. 4.7.0's
-- renewal.ReadLockTask) for one owner and any lease, except that the hash
-- never loses TTL another holder may need.
--
-- KEYS[1]  lock hash            N
-- KEYS[2]  timeout key prefix   {N}:<owner>:rwlock_timeout (hold k adds ":k")
-- ARGV[1]  lease in ms
-- ARGV[2]  owner                <client uuid>:<owner id>
--
-- When the owner has a read count n in N, its timeout keys n down to 1 get
-- the lease as their TTL, and N gets it too; when N has a field besides
-- "mode" and the owner's (another reader, a writer), N keeps its TTL if
-- that is longer.
--
-- Returns 1 when the owner's holds were extended, 0 when it holds no read
-- hold (nothing changed). Idempotent: safe to retry.
local count = redis.call('hget', KEYS[1], ARGV[2])
if count == false then
    return 0
end
for k = tonumber(count), 1, -1 do
    redis.call('pexpire', KEYS[2] .. ':' .. k, ARGV[1])
end
local ttl = tonumber(ARGV[1])
if redis.call('hlen', KEYS[1]) > 2 then
    ttl = math.max(ttl, redis.call('pttl', KEYS[1]))
end
redis.call('pexpire', KEYS[1], ttl)
return 1
