-- semaphore: acquire n permits atomically, each a lease (limit/src/semaphore_engine.hpp is
-- the same decision, tested without a server; keep the two in step). Prepended at load time:
-- next_fence(ttl) from <redcoord/core/detail/fence_lua.hpp>, the locks' fencing counter rule,
-- and queue_head(queue, me, alive) from <redcoord/core/detail/queue_lua.hpp>.
-- KEYS[1]  holders: a sorted set, member "<token>:<i>" per permit, scored by its lease's end
--          (server time, us); KEYS[1]:permits keeps the latest grant's N, as long as the set
-- KEYS[2]  the fencing counter
-- KEYS[3]  the waiters: a sorted set of waiter ids scored by the end of their entry; while it
--          exists, releases publish
-- ARGV[1]  token, ARGV[2] n, ARGV[3] permits (the semaphore's N), ARGV[4] ttl in ms,
-- ARGV[5]  the caller's waiter id ("" when it will not wait), ARGV[6] its longest sleep in ms,
-- ARGV[7]  the grace in ms its entry outlives its sleep
-- KEYS[4]  the fifo option's list of waiter ids in arrival order; ARGV[8] "1": fifo order
-- Cost     O(n log holders), plus lapsed leases dropped; with fifo O(list) for a waiter's
--          first refusal (LREM), plus dead waiters dropped from the list's head
-- Reply    {1, fencing token, permits held} when acquired;
--          {0, ms until enough leases end (0: none awaited), permits held} when refused
-- No barging: a caller that is not queued leaves a free permit for each queued waiter, so a
-- holder that releases and asks again at once does not beat those it woke.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local n, limit, ttl = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local id = ARGV[5]
local fifo = ARGV[8] == '1'
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
local used = redis.call('ZCARD', KEYS[1])
local queued = id ~= '' and redis.call('ZSCORE', KEYS[3], id)
local admit, head
if fifo then
  -- Only the list's live head, or anyone when no live waiter is queued.
  head = queue_head(KEYS[4], id, function(w) return redis.call('ZSCORE', KEYS[3], w) end)
  admit = used + n <= limit and (not head or head == id)
else
  local others = redis.call('ZCARD', KEYS[3])
  if queued then others = others - 1 end
  local room = n
  if not queued then room = n + others end
  admit = used + room <= limit
end
if admit then
  if queued then redis.call('ZREM', KEYS[3], id) end
  if fifo and head == id then redis.call('LPOP', KEYS[4]) end
  local ends = now + ttl * 1000
  for i = 1, n do redis.call('ZADD', KEYS[1], ends, ARGV[1] .. ':' .. i) end
  -- The set lives as long as its longest lease, and N (as this caller counts it, for
  -- inspect) as long as the set.
  local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  local lives = math.ceil((tonumber(last[2]) - now) / 1000)
  redis.call('PEXPIRE', KEYS[1], lives)
  redis.call('SET', KEYS[1] .. ':permits', limit, 'PX', lives)
  -- Permits left over: the next in line need not wait for a release to find out.
  if fifo and used + n < limit and redis.call('EXISTS', KEYS[4]) == 1 then
    redis.call('PUBLISH', KEYS[1] .. ':released', 'released')
  end
  return {1, next_fence(ttl), used + n}
end
local wait_us = 0
if used + n > limit then
  local i = used + n - limit - 1
  local due = redis.call('ZRANGE', KEYS[1], i, i, 'WITHSCORES')
  if due[2] then wait_us = tonumber(due[2]) - now end
end
if id ~= '' then
  -- The entry lives as long as the waiter sleeps (until the awaited lease ends, or its
  -- longest sleep) plus the grace: a dead waiter holds newcomers back no longer.
  local sleep = wait_us
  if sleep <= 0 then sleep = tonumber(ARGV[6]) * 1000 end
  redis.call('ZADD', KEYS[3], now + sleep + tonumber(ARGV[7]) * 1000, id)
  local last = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')
  local lives = math.ceil((tonumber(last[2]) - now) / 1000)
  redis.call('PEXPIRE', KEYS[3], lives)
  if fifo then
    -- A waiter not queued (new, or whose entry lapsed) goes to the back.
    if not queued then
      redis.call('LREM', KEYS[4], 0, id)
      redis.call('RPUSH', KEYS[4], id)
    end
    redis.call('PEXPIRE', KEYS[4], lives)
  end
end
return {0, math.ceil(wait_us / 1000), used}
