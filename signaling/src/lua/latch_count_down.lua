-- latch: count down, and publish the opening when the count reaches 0.
-- KEYS[1]  count key
-- ARGV[1]  decrement   ARGV[2]  channel   ARGV[3]  envelope header   ARGV[4]  TTL in ms
-- Reply    the count left; an error when the latch does not exist
-- Cost     O(1)
local v = redis.call('GET', KEYS[1])
if not v then return redis.error_reply('ERR latch does not exist') end
v = tonumber(v)
if v <= 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  return 0
end
v = v - tonumber(ARGV[1])
if v < 0 then v = 0 end
redis.call('SET', KEYS[1], v, 'PX', ARGV[4])
if v == 0 then redis.call('PUBLISH', ARGV[2], ARGV[3] .. 'open') end
return v
