-- One campaign round of master_selector (master_selector.cpp says why the expiry is set
-- first, and how epochs keep increasing).
-- KEYS[1]  selector hash {round, holder, nonce, epoch}   KEYS[2]  epoch counter
-- KEYS[3]  candidates: sorted set of identities, each scored with the server time (ms) at which
--          its last round's term ends; for inspect_election(), never read here
-- ARGV[1]  identity   ARGV[2]  term in ms   ARGV[3]  highest epoch the caller has seen
-- ARGV[4]  the caller's instance nonce   ARGV[5]  the epoch counter's TTL in ms
-- ARGV[6]  "1" when the caller still relies on its last round's lease, else "0"
-- Reply    {is_holder, epoch, round, holder, new_term}
-- Cost     O(log C) for C candidates (O(1) for the election itself)
local clock = redis.call('TIME')
local now_ms = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local term = tonumber(ARGV[2])
-- Candidates whose term since their last round has ended are dropped as others campaign; the
-- key itself outlives the last round by a term.
redis.call('ZADD', KEYS[3], now_ms + term, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now_ms)
if redis.call('PTTL', KEYS[3]) < term then redis.call('PEXPIRE', KEYS[3], term) end
local round = redis.call('HINCRBY', KEYS[1], 'round', 1)
local f = redis.call('HMGET', KEYS[1], 'holder', 'epoch', 'nonce')
local fresh = round == 1 or not f[1]
local ours = f[1] == ARGV[1] and f[3] == ARGV[4]
if ours and ARGV[6] ~= '1' then fresh = true end
if fresh or ours or redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
if fresh then
  local stored = redis.call('GET', KEYS[2])
  local last = 0
  if stored then
    last = tonumber(stored)
    if not last then return redis.error_reply('ERR election epoch counter is not an integer: ' .. KEYS[2]) end
  end
  local epoch = math.max(last + 1, tonumber(clock[1]) * 1000000 + tonumber(clock[2]), tonumber(ARGV[3]) + 1)
  if epoch >= 9007199254740992 then
    return redis.error_reply('ERR election epoch would reach 2^53: ' .. KEYS[2])
  end
  local text = string.format('%d', epoch)
  redis.call('SET', KEYS[2], text, 'PX', ARGV[5])
  redis.call('HSET', KEYS[1], 'holder', ARGV[1], 'nonce', ARGV[4], 'epoch', text)
  return {1, epoch, round, ARGV[1], 1}
end
local epoch = tonumber(f[2]) or 0
if ours then
  redis.call('PEXPIRE', KEYS[2], ARGV[5])
  return {1, epoch, round, f[1], 0}
end
return {0, epoch, round, f[1], 0}
