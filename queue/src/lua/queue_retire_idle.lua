-- Unregisters a consumer only while its processing list is empty.
-- KEYS[1]  consumers set   KEYS[2]  processing list   KEYS[3]  heartbeat
-- ARGV[1]  consumer id
-- Reply    1 when it did, else 0
-- Cost     O(1)
if redis.call('LLEN', KEYS[2]) > 0 then return 0 end
redis.call('DEL', KEYS[3])
redis.call('SREM', KEYS[1], ARGV[1])
return 1
