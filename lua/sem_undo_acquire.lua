-- sem_undo_acquire: give back one acquisition whose reply may have been lost.
-- Redisson has no such script; its effect is RedissonSemaphore.releaseAsync
-- (the undo Redisson runs when replicas did not acknowledge an acquire),
-- done at most once per receipt.
--
-- KEYS[1]  free-permit count    N
-- KEYS[2]  channel              redisson_sc:{N}
-- KEYS[3]  receipt              the one sem_acquire was called with
-- ARGV[1]  permits              p, as acquired
-- ARGV[2]  publish command      PUBLISH or SPUBLISH
-- ARGV[3]  receipt TTL in ms
--
-- Returns 1 when the receipt recorded an acquisition: N is incremented by
-- p, the new count is published and the receipt becomes "u". Returns 0
-- otherwise. A missing receipt becomes "u" too, so an acquire with it that
-- arrives later does nothing. Idempotent: safe to retry.
local seen = redis.call('get', KEYS[3])
if seen == '1' then
    local free = redis.call('incrby', KEYS[1], ARGV[1])
    redis.call(ARGV[2], KEYS[2], free)
    redis.call('set', KEYS[3], 'u', 'px', ARGV[3])
    return 1
end
if seen == false then
    redis.call('set', KEYS[3], 'u', 'px', ARGV[3])
end
return 0
