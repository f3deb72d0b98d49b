-- pes_renew: extend many live expirable permits of one cluster slot in one call.
-- Redisson has no such script (it has no watchdog for permits); each entry
-- has the effect of RedissonPermitExpirableSemaphore.updateLeaseTimeAsync
-- on a permit that has not expired, without the reclaim.
--
-- KEYS[1..k]   leased permits   {Ni}:timeout (all in one slot; may repeat)
-- ARGV[1]      expiry           now + watchdog timeout in epoch ms
-- ARGV[2]      now              the caller's clock in epoch ms
-- ARGV[3..k+2] permit ids       id i is leased in KEYS[i], 16 raw bytes
--
-- Returns an array of k integers: 1 when id i was leased and not expired
-- (score > now; its score becomes the expiry), else 0 and nothing changed.
-- Idempotent: safe to retry.
local now = tonumber(ARGV[2])
local renewed = {}
for i = 1, #KEYS do
    local expiry = redis.call('zscore', KEYS[i], ARGV[i + 2])
    if expiry ~= false and tonumber(expiry) > now then
        redis.call('zadd', KEYS[i], ARGV[1], ARGV[i + 2])
        renewed[i] = 1
    else
        renewed[i] = 0
    end
end
return renewed
