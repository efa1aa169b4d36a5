-- A consumer leaves: its processing list goes back to the queue and it is unregistered.
-- KEYS[1]  consumers set   KEYS[2]  ready list   KEYS[3]  dead-letter list
-- KEYS[4]  processing list   KEYS[5]  heartbeat
-- ARGV[1]  consumer id   ARGV[2]  max attempts   ARGV[3]  nonce   ARGV[4]  now
-- ARGV[5]  the queue's push channel (announces requeued messages, as a push)
-- Reply    {requeued, dead-lettered}
-- Cost     O(processing list)
local r, d = reclaim(KEYS[4], KEYS[2], KEYS[3], tonumber(ARGV[2]), ARGV[3], ARGV[4], 0)
redis.call('DEL', KEYS[5])
redis.call('SREM', KEYS[1], ARGV[1])
if r > 0 then redis.pcall('PUBLISH', ARGV[5], '') end
return {r, d}
