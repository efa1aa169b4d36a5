-- barrier's one script (barrier.cpp), after the party fragment.
-- KEYS[1]  state hash   KEYS[2]  arrivals zset   KEYS[3]  passed zset
-- ARGV[1]  member   ARGV[2]  parties (0: any)   ARGV[3]  lease in ms   ARGV[4]  channel
-- ARGV[5]  envelope header   ARGV[6]  mode: arrive | refresh | withdraw | count | reset | force
-- ARGV[7]  generation the member arrived in   ARGV[8]  passed-member retention in ms
-- ARGV[9]  idle TTL in ms
-- Reply    {code (detail::phase_code), generation, arrivals}
-- Cost     O(n log n) when the barrier opens (n parties), else O(log n)
local gen = tonumber(redis.call('HGET', KEYS[1], 'gen') or '0')
local mode = ARGV[6]
if mode == 'count' then
  return {0, gen, redis.call('ZCOUNT', KEYS[2], '(' .. now, '+inf')}
end
if mode == 'reset' then
  local live = redis.call('ZCOUNT', KEYS[2], '(' .. now, '+inf')
  if live > 0 then return {0, gen, live} end
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
  return {1, 0, 0}
end
if mode == 'force' then
  -- The members inside must learn that they were dropped: their generation moves on while
  -- the passed set (deleted) does not name them, which reads as `lost`, and the publish wakes
  -- them now rather than at their next refresh. The party count goes, so any count may start
  -- the barrier afresh.
  local live = redis.call('ZCOUNT', KEYS[2], '(' .. now, '+inf')
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
  if live == 0 then return {1, 0, 0} end
  redis.call('HSET', KEYS[1], 'gen', gen + 1)
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[9]))
  redis.call('PUBLISH', ARGV[4], ARGV[5] .. tostring(gen + 1))
  return {1, gen + 1, live}
end
if mode ~= 'arrive' and gen ~= tonumber(ARGV[7]) then
  local until_ms = redis.call('ZSCORE', KEYS[3], ARGV[1])
  if until_ms and tonumber(until_ms) > now then return {1, gen, 0} end
  return {3, gen, 0}
end
local n = live()
if mode == 'withdraw' then
  redis.call('ZREM', KEYS[2], ARGV[1])
  return {0, gen, n}
end
n = join(tonumber(ARGV[9]))
if n >= parties then
  local keep = tonumber(ARGV[8])
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  for _, m in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
    redis.call('ZADD', KEYS[3], now + keep, m)
  end
  redis.call('PEXPIRE', KEYS[3], keep)
  redis.call('DEL', KEYS[2])
  redis.call('HSET', KEYS[1], 'gen', gen + 1)
  redis.call('PUBLISH', ARGV[4], ARGV[5] .. tostring(gen + 1))
  return {1, gen, n}
end
return {0, gen, n}
