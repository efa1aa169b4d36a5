-- double_barrier's one script (double_barrier.cpp), after the party fragment.
-- KEYS[1]  state hash   KEYS[2]  members zset
-- ARGV[1]  member   ARGV[2]  parties (0: any)   ARGV[3]  lease in ms   ARGV[4]  channel
-- ARGV[5]  envelope header   ARGV[6]  mode: enter | refresh | withdraw | keep | leave | check |
--          reset   ARGV[7]  round the member entered in   ARGV[8]  idle TTL in ms
-- Reply    {code (detail::phase_code), round, count}
-- Cost     O(log n) plus lapsed leases dropped
local round = tonumber(redis.call('HGET', KEYS[1], 'round') or '0')
local ready = redis.call('HGET', KEYS[1], 'ready') == '1'
local mode = ARGV[6]
local mine = tonumber(ARGV[7])
local idle = tonumber(ARGV[8])
local function end_round()
  redis.call('HSET', KEYS[1], 'round', round + 1, 'ready', '0')
  redis.call('PEXPIRE', KEYS[1], idle)
  redis.call('PUBLISH', ARGV[4], ARGV[5] .. 'empty')
end
if mode == 'reset' then
  local n = live()
  if n > 0 then return {0, round, n} end
  redis.call('DEL', KEYS[1], KEYS[2])
  return {1, 0, 0}
end
if mode == 'leave' or mode == 'check' then
  if round ~= mine or not ready then
    if mode == 'leave' then return {3, round, 0} end
    return {1, round, 0}
  end
  local was = 1
  if mode == 'leave' then was = redis.call('ZREM', KEYS[2], ARGV[1]) end
  local n = live()
  if n == 0 then end_round() else touch(idle) end
  if was == 0 then return {3, round, n} end
  if n == 0 then return {1, round, 0} end
  return {0, round, n}
end
if ready then
  if mode == 'enter' then
    local n = live()
    if n > 0 then return {2, round, n} end
    end_round()
    round = round + 1
  else
    if round ~= mine or not redis.call('ZSCORE', KEYS[2], ARGV[1]) then return {3, round, 0} end
    if mode == 'keep' then
      redis.call('ZADD', KEYS[2], 'XX', now + tonumber(ARGV[3]), ARGV[1])
      touch(idle)
    end
    return {1, round, 0}
  end
elseif mode ~= 'enter' and round ~= mine then
  return {3, round, 0}
elseif mode == 'keep' then
  return {3, round, 0}
end
local n = live()
if mode == 'withdraw' then
  redis.call('ZREM', KEYS[2], ARGV[1])
  return {0, round, n}
end
n = join(idle)
if n >= parties then
  redis.call('HSET', KEYS[1], 'ready', '1')
  redis.call('PUBLISH', ARGV[4], ARGV[5] .. 'ready')
  return {1, round, n}
end
return {0, round, n}
