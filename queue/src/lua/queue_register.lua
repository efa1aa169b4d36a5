-- Registers a consumer and renews its heartbeat.
-- KEYS[1]  consumers set   KEYS[2]  heartbeat
-- ARGV[1]  consumer id   ARGV[2]  lease in ms
-- Reply    {1 if the consumer was not in the set, 1 if the heartbeat existed}
-- Cost     O(1)
local added = redis.call('SADD', KEYS[1], ARGV[1])
local had = redis.call('EXISTS', KEYS[2])
redis.call('SET', KEYS[2], '1', 'PX', ARGV[2])
return {added, had}
