-- rw_lock: extend a share or the exclusive hold to ttl from now, iff its lease is still live
-- (see rw_engine.hpp).
-- KEYS[1]  readers, KEYS[2] the writer (as rwlock_read.lua)
-- ARGV[1]  token, ARGV[2] 'r' or 'w', ARGV[3] ttl in ms
-- Cost     O(log readers)
-- Reply    1 when extended, 0 when the hold was lost
local ttl = tonumber(ARGV[3])
if ARGV[2] == 'w' then
  if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
  redis.call('PEXPIRE', KEYS[2], ttl)
  return 1
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], 'XX', now + ttl * 1000, ARGV[1])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIRE', KEYS[1], math.ceil((tonumber(last[2]) - now) / 1000))
return 1
