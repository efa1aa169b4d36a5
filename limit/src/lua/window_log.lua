-- sliding_window_limiter: at most `limit` cost units in any window of `window` microseconds,
-- on the server's clock, from a log of admitted units (limit/src/window_log.hpp is the same
-- decision, tested without a server; keep the two in step).
-- KEYS[1]  the log: a sorted set, one member per admitted unit, scored by its server time (us)
-- KEYS[2]  the sequence that names the members (two units admitted in one microsecond differ)
--          (and KEYS[1]:spec, "<limit>:<window>" of the latest admission, read by inspect)
-- ARGV[1]  limit (>= 1)
-- ARGV[2]  window in microseconds (> 0)
-- ARGV[3]  cost of this request (1 <= cost <= limit)
-- Cost     O(log units + cost), plus the units that left the window dropped
-- Reply    {allowed 1|0, remaining, retry_after us, reset_after us}
-- A unit admitted at s counts while now < s + window. The keys expire a window after the
-- last admission, so an idle limiter leaves no key.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local n = redis.call('ZCARD', KEYS[1])
if n + cost > limit then
  -- The (n + cost - limit)-th oldest unit must leave the window before this request fits.
  local i = n + cost - limit - 1
  local due = redis.call('ZRANGE', KEYS[1], i, i, 'WITHSCORES')
  local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  return {0, limit - n, tonumber(due[2]) + window - now, tonumber(last[2]) + window - now}
end
local seq = redis.call('INCRBY', KEYS[2], cost)
for i = seq - cost + 1, seq do redis.call('ZADD', KEYS[1], now, i) end
local ms = math.ceil(window / 1000)
redis.call('PEXPIRE', KEYS[1], ms)
redis.call('PEXPIRE', KEYS[2], ms)
redis.call('SET', KEYS[1] .. ':spec', ARGV[1] .. ':' .. ARGV[2], 'PX', ms)  -- for inspect
return {1, limit - n - cost, 0, window}
