-- rw_lock: take the exclusive hold (the writer's lease); limit/src/rw_engine.hpp is the same
-- decision, tested without a server: keep the two in step. Prepended at load time:
-- next_fence(ttl) from <redcoord/core/detail/fence_lua.hpp>.
-- KEYS[1]  readers   KEYS[2]  fencing counter   KEYS[3]  writer   KEYS[4]  intents
-- KEYS[5]  waiting readers (all as rwlock_read.lua)
-- ARGV[1]  token, ARGV[2] ttl in ms, ARGV[3] the caller's waiter id ("" when it will not
--          wait), ARGV[4] its longest sleep in ms, ARGV[5] the grace in ms
-- Cost     O(log readers), plus lapsed leases dropped
-- Reply    {1, fencing token, 0} when acquired;
--          {0, ms until what refuses it ends (0: unknown), readers} when refused
-- A refused caller that waits (re)registers its intent, which refuses new readers; the entry
-- lives one sleep plus the grace, so the intent of a writer that died lapses by itself.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local ttl, id = tonumber(ARGV[2]), ARGV[3]
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
local readers = redis.call('ZCARD', KEYS[1])
local writer_left = redis.call('PTTL', KEYS[3])
if writer_left == -2 and readers == 0 then
  if id ~= '' then redis.call('ZREM', KEYS[4], id) end
  redis.call('SET', KEYS[3], ARGV[1], 'PX', ttl)
  return {1, next_fence(ttl), 0}
end
local wait_us = 0
if writer_left ~= -2 then
  wait_us = math.max(writer_left, 0) * 1000
else
  local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  wait_us = tonumber(last[2]) - now
end
if id ~= '' then
  local life = (tonumber(ARGV[4]) + tonumber(ARGV[5])) * 1000
  redis.call('ZADD', KEYS[4], now + life, id)
  local last = redis.call('ZRANGE', KEYS[4], -1, -1, 'WITHSCORES')
  redis.call('PEXPIRE', KEYS[4], math.ceil((tonumber(last[2]) - now) / 1000))
end
return {0, math.ceil(wait_us / 1000), readers}
