-- rw_renew_read: extend many read holds of one cluster slot in one call.
-- Matches Redisson 4.4.0 .. 4.7.0 renewal.ReadLockTask (earlier versions
-- also renewed other clients' readers; see docs/protocol.md).
--
-- KEYS[1], KEYS[2]      lock hash N1 and its key prefix {N1} (N1 itself
--                        when N1 contains "{"); then N2, {N2}, and so on,
--                        all in one cluster slot
-- ARGV[1]                lease in ms (the watchdog timeout)
-- ARGV[2..]              per lock, in order: c, then c owners of this
--                        client on that lock
--
-- For each lock: for each listed owner that still has a read count n in
-- Ni, the owner's timeout keys n down to 1 get the lease as their TTL;
-- when any listed owner still reads, Ni gets the lease too. Other clients'
-- readers are never touched, so a dead client's readers expire.
--
-- Returns an array with one integer per lock: 1 when it was renewed, 0
-- when none of its listed owners reads it any more.
-- Idempotent: safe to retry.
local renewed = {}
local a = 2
for i = 1, #KEYS, 2 do
    local alive = false
    local owners = tonumber(ARGV[a])
    a = a + 1
    for _ = 1, owners do
        local count = redis.call('hget', KEYS[i], ARGV[a])
        if count ~= false then
            alive = true
            for k = tonumber(count), 1, -1 do
                redis.call('pexpire', KEYS[i + 1] .. ':' .. ARGV[a] .. ':rwlock_timeout:' .. k, ARGV[1])
            end
        end
        a = a + 1
    end
    if alive then
        redis.call('pexpire', KEYS[i], ARGV[1])
        renewed[#renewed + 1] = 1
    else
        renewed[#renewed + 1] = 0
    end
end
return renewed
