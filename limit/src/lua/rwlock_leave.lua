-- rw_lock: a waiter that gives up withdraws its intent or waiting entry (see rw_engine.hpp);
-- a withdrawn intent may let the waiting readers in, so they are told.
-- KEYS[1]  readers (for the channel), KEYS[2] the intents, KEYS[3] the waiting readers
-- ARGV[1]  the waiter id
-- Cost     O(log waiters)
-- Reply    1 when an intent was withdrawn, else 0
local intent = redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
if intent > 0 and redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('PUBLISH', KEYS[1] .. ':released', 'released')
end
return intent
