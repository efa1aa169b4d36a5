-- rw_lock: release a share or the exclusive hold (see rw_engine.hpp).
-- KEYS[1]  readers, KEYS[2] the writer, KEYS[3] the intents, KEYS[4] the waiting readers (as
--          rwlock_read.lua); while KEYS[3] or KEYS[4] exists, a release publishes on
--          KEYS[1] .. ':released'
-- ARGV[1]  token, ARGV[2] 'r' for a share, 'w' for the exclusive hold
-- Cost     O(log readers)
-- Reply    1 when it was still held, 0 when its lease had ended (or another writer holds)
local removed = 0
if ARGV[2] == 'r' then
  removed = redis.call('ZREM', KEYS[1], ARGV[1])
elseif redis.call('GET', KEYS[2]) == ARGV[1] then
  removed = redis.call('DEL', KEYS[2])
end
if removed > 0 and redis.call('EXISTS', KEYS[3], KEYS[4]) > 0 then
  redis.call('PUBLISH', KEYS[1] .. ':released', 'released')
end
return removed
