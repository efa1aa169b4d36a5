-- Fragment, the opening of the barrier and double_barrier scripts (party.hpp). Sets `now`
-- (server time in ms), `parties`, and refuses a party count that differs from the stored one
-- (ARGV[2] = 0: any). Defines live() (drops lapsed leases, counts the rest), touch(idle) and
-- join(idle) (starts or renews ARGV[1]'s lease; returns how many are live).
-- KEYS[1]  state hash   KEYS[2]  members' leases (zset scored by lease end, server ms)
-- ARGV[1]  member   ARGV[2]  party count (0: any)   ARGV[3]  lease in ms
-- Cost     O(log n) per lapsed lease dropped
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local parties = tonumber(ARGV[2])
local stored = redis.call('HGET', KEYS[1], 'parties')
if stored and parties > 0 and tonumber(stored) ~= parties then
  return redis.error_reply('ERR barrier parties mismatch: it has ' .. stored)
end
local function live()
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  return redis.call('ZCARD', KEYS[2])
end
local function touch(idle)
  redis.call('PEXPIRE', KEYS[1], idle)
  redis.call('PEXPIRE', KEYS[2], idle)
end
local function join(idle)
  redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
  if not stored then redis.call('HSET', KEYS[1], 'parties', parties) end
  touch(idle)
  return redis.call('ZCARD', KEYS[2])
end
