-- Drops a repeatable job.
-- KEYS[1]  the queue's base key
-- ARGV[1]  repeat name
-- Reply    1 when it existed, else 0
-- Cost     O(1).
redis.call('DEL', base .. ':repeat:' .. ARGV[1])
return redis.call('SREM', base .. ':repeats', ARGV[1])
