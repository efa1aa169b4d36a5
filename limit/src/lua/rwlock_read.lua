-- rw_lock: take a share (a reader's lease); limit/src/rw_engine.hpp is the same decision,
-- tested without a server: keep the two in step. Prepended at load time: next_fence(ttl) from
-- <redcoord/core/detail/fence_lua.hpp>, the locks' fencing counter rule.
-- KEYS[1]  readers: a sorted set of reader tokens scored by the end of their lease (server
--          time, us)
-- KEYS[2]  the fencing counter
-- KEYS[3]  the writer: its token, expiring with its lease
-- KEYS[4]  the writers' intents: a sorted set of waiting writer ids scored by the end of their
--          entry; a live intent refuses new readers (writer preference)
-- KEYS[5]  the waiting readers: a sorted set of waiter ids scored by the end of their entry;
--          while it (or KEYS[4]) exists, releases publish on KEYS[1] .. ':released'
-- ARGV[1]  token, ARGV[2] ttl in ms, ARGV[3] the caller's waiter id ("" when it will not
--          wait), ARGV[4] its longest sleep in ms, ARGV[5] the grace in ms its entry outlives
--          its sleep
-- Cost     O(log readers), plus lapsed leases dropped
-- Reply    {1, fencing token, readers} when acquired;
--          {0, ms until what refuses it ends (0: unknown), readers} when refused
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local ttl, id = tonumber(ARGV[2]), ARGV[3]
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now)
local wait_us = 0
-- PTTL: -2 when no writer holds (-1, a writer key without expiry, is never written by redcoord
-- but still counts as held).
local writer_left = redis.call('PTTL', KEYS[3])
if writer_left ~= -2 then
  wait_us = math.max(writer_left, 0) * 1000
elseif redis.call('ZCARD', KEYS[4]) > 0 then
  local last = redis.call('ZRANGE', KEYS[4], -1, -1, 'WITHSCORES')
  wait_us = tonumber(last[2]) - now
else
  if id ~= '' then redis.call('ZREM', KEYS[5], id) end
  redis.call('ZADD', KEYS[1], now + ttl * 1000, ARGV[1])
  -- The set lives as long as its longest lease.
  local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  redis.call('PEXPIRE', KEYS[1], math.ceil((tonumber(last[2]) - now) / 1000))
  return {1, next_fence(ttl), redis.call('ZCARD', KEYS[1])}
end
if id ~= '' then
  local sleep = wait_us
  if sleep <= 0 then sleep = tonumber(ARGV[4]) * 1000 end
  redis.call('ZADD', KEYS[5], now + sleep + tonumber(ARGV[5]) * 1000, id)
  local last = redis.call('ZRANGE', KEYS[5], -1, -1, 'WITHSCORES')
  redis.call('PEXPIRE', KEYS[5], math.ceil((tonumber(last[2]) - now) / 1000))
end
return {0, math.ceil(wait_us / 1000), redis.call('ZCARD', KEYS[1])}
