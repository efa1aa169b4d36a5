-- Makes a dead or failed job waiting again, its attempts reset (a flow's job no longer
-- waits for its dependencies; the jobs that waited for it were failed or released already).
-- KEYS[1]  the queue's base key
-- ARGV[1]  job id   ARGV[2]  wake channel
-- Reply    1, or 0 when the job is in another state (or unknown)
-- Cost     O(log N).
local k = jk(ARGV[1])
local f = redis.call('HMGET', k, 'state', 'o', 'g')
if f[1] ~= 'dead' and f[1] ~= 'failed' then return 0 end
-- Into :waiting before out of its index (see housekeep()).
enqueue(ARGV[1], priority_of(f[2]), f[3])
redis.call('ZREM', base .. ':' .. f[1], ARGV[1])
redis.call('HDEL', k, 'attempts', 'cancel', 'finished', 'error')
-- A job failed by a dependency runs without waiting for its other dependencies.
detach(ARGV[1])
redis.call('HSET', k, 'state', 'waiting')
redis.call('PUBLISH', ARGV[2], 'w')
return 1
