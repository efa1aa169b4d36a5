-- Gives back a message an asynchronous pop moved after it was cancelled: back to the head of
-- the ready list (the end pops take from), attempts unchanged, as it was never handed out. The
-- push comes before the removal, so a failed push leaves it in flight (see queue_nack.lua).
-- KEYS[1]  processing list   KEYS[2]  ready list
-- ARGV[1]  message   ARGV[2]  the queue's push channel (announces it, as a push)
-- Reply    1 given back, 0 not in the processing list
-- Cost     O(processing list) (LPOS, LREM)
if not redis.call('LPOS', KEYS[1], ARGV[1]) then return 0 end
redis.call('RPUSH', KEYS[2], ARGV[1])
redis.call('LREM', KEYS[1], 1, ARGV[1])
redis.pcall('PUBLISH', ARGV[2], '')
return 1
