-- A waiting or delayed job fails at once; an active one is flagged (`cancel` 1)
-- and its id published on the cancel channel, so its worker stops it.
-- KEYS[1]  the queue's base key
-- ARGV[1]  job id   ARGV[2]  cancel channel `<base>:cancel`
-- Reply    the state the job was in, or false for no such job
-- Cost     O(log N).
local k = jk(ARGV[1])
local state = redis.call('HGET', k, 'state')
if not state then return false end
if state == 'waiting' or state == 'delayed' then
  -- Into :failed before out of its index (see housekeep()).
  finish(ARGV[1], 'failed', 'cancelled', now_ms())
  redis.call('ZREM', base .. ':' .. state, ARGV[1])
elseif state == 'active' then
  redis.call('HSET', k, 'cancel', '1')
  redis.call('PUBLISH', ARGV[2], ARGV[1])
end
return state
