-- Counts of a reliable queue. Reads only.
-- KEYS[1]  consumers set   KEYS[2]  ready list   KEYS[3]  dead-letter list
-- ARGV[1]  processing key prefix   ARGV[2]  heartbeat key prefix
-- Reply    {ready, dead, consumer, in flight, alive, consumer, ...}
-- Cost     O(consumers)
local out = {redis.call('LLEN', KEYS[2]), redis.call('LLEN', KEYS[3])}
for _, c in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  out[#out + 1] = c
  out[#out + 1] = redis.call('LLEN', ARGV[1] .. c)
  out[#out + 1] = redis.call('EXISTS', ARGV[2] .. c)
end
return out
