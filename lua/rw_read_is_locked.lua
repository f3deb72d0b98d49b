-- rw_read_is_locked: whether a read/write lock has read holds.
-- Matches Redisson 3.24.0 .. 4.7.0 RedissonReadLock.isLockedAsync.
--
-- KEYS[1]  lock hash            N
-- ARGV[1]  (none; the script reads only)
--
-- Returns 1 when the lock is in read mode, or in write mode with the
-- writer also holding read holds (more than the "mode" and writer fields),
-- else 0. Read-only: safe to retry.
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == 'read' then
    return 1
end
if mode == 'write' and redis.call('hlen', KEYS[1]) > 2 then
    return 1
end
return 0
