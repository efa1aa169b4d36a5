-- Makes a dead or failed job waiting again, its attempts reset.
-- KEYS[1]  the queue's base key
-- ARGV[1]  job id   ARGV[2]  wake channel
-- Reply    1, or 0 when the job is in another state (or unknown)
-- Cost     O(log N).
local k = jk(ARGV[1])
local f = redis.call('HMGET', k, 'state', 'o')
if f[1] ~= 'dead' and f[1] ~= 'failed' then return 0 end
-- Into :waiting before out of its index (see housekeep()).
enqueue(ARGV[1], priority_of(f[2]))
redis.call('ZREM', base .. ':' .. f[1], ARGV[1])
redis.call('HDEL', k, 'attempts', 'cancel', 'finished', 'error')
redis.call('HSET', k, 'state', 'waiting')
redis.call('PUBLISH', ARGV[2], 'w')
return 1
