-- semaphore: acquire n permits atomically, each a lease (limit/src/semaphore_engine.hpp is
-- the same decision, tested without a server; keep the two in step). Prepended at load time:
-- next_fence(ttl) from <redcoord/core/detail/fence_lua.hpp>, the locks' fencing counter rule.
-- KEYS[1]  holders: a sorted set, member "<token>:<i>" per permit, scored by its lease's end
--          (server time, us)
-- KEYS[2]  the fencing counter
-- KEYS[3]  the waiting flag: present while a refused caller waits, so releases publish
-- ARGV[1]  token, ARGV[2] n, ARGV[3] permits (the semaphore's N), ARGV[4] ttl in ms,
-- ARGV[5]  "1" when a refused caller will wait for a release
-- Reply    {1, fencing token, permits held} when acquired;
--          {0, ms until enough leases end, permits held} when refused
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local n, limit, ttl = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local used = redis.call('ZCARD', KEYS[1])
if used + n <= limit then
  local ends = now + ttl * 1000
  for i = 1, n do redis.call('ZADD', KEYS[1], ends, ARGV[1] .. ':' .. i) end
  -- The set lives as long as its longest lease.
  local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  redis.call('PEXPIRE', KEYS[1], math.ceil((tonumber(last[2]) - now) / 1000))
  return {1, next_fence(ttl), used + n}
end
local i = used + n - limit - 1
local due = redis.call('ZRANGE', KEYS[1], i, i, 'WITHSCORES')
local wait_ms = 0
if due[2] then wait_ms = math.ceil((tonumber(due[2]) - now) / 1000) end
if ARGV[5] == '1' then
  -- Lives past the lease the caller waits for, and is renewed by each of its attempts.
  redis.call('SET', KEYS[3], '1', 'PX', wait_ms + 1000)
end
return {0, wait_ms, used}
