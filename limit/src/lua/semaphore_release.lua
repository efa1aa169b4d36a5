-- semaphore: release one acquisition's permits (see semaphore_engine.hpp).
-- KEYS[1]  holders (see semaphore_acquire.lua)
-- KEYS[2]  the waiting flag: when present, a release publishes on KEYS[1] .. ':released'
-- ARGV[1]  token, ARGV[2] n
-- Cost     O(n log holders)
-- Reply    how many of the n permits were still held (0: the leases had ended)
local removed = 0
for i = 1, tonumber(ARGV[2]) do removed = removed + redis.call('ZREM', KEYS[1], ARGV[1] .. ':' .. i) end
if removed > 0 and redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('PUBLISH', KEYS[1] .. ':released', 'released')
end
return removed
