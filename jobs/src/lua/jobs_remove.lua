-- Deletes a job and its result unless it is active.
-- KEYS[1]  the queue's base key
-- ARGV[1]  job id
-- Reply    the state it was in ('active': nothing deleted), or false for no such job
-- Cost     O(log N).
local k = jk(ARGV[1])
local state = redis.call('HGET', k, 'state')
if not state or state == 'active' then return state end
redis.call('ZREM', base .. ':' .. state, ARGV[1])
redis.call('DEL', k, base .. ':result:' .. ARGV[1])
return state
