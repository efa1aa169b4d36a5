-- semaphore: a waiter that gave up leaves the queue (see semaphore_engine.hpp).
-- KEYS[1]  holders   KEYS[2]  the waiters (sorted set)   KEYS[3]  the fifo option's list
-- ARGV[1]  the waiter id
-- Cost     O(log waiters), plus O(list) (LREM) with the fifo option
-- Reply    1 when it was queued
-- Waiters still queued are woken: the one that left may have been the fifo list's head, or
-- have held back a newcomer's permit.
local was = redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('LREM', KEYS[3], 0, ARGV[1])
if was == 1 and redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('PUBLISH', KEYS[1] .. ':released', 'released')
end
return was
