-- Deletes a job and its result unless it is active. The jobs waiting for it
-- count it as failed (jobs_cancel.lua), so none waits for a job that is gone.
-- KEYS[1]  the queue's base key
-- ARGV[1]  job id
-- Reply    the state it was in ('active': nothing deleted), or false for no such job
-- Cost     O(log N).
local k = jk(ARGV[1])
local f = redis.call('HMGET', k, 'state', 'g')
local state = f[1]
if not state or state == 'active' then return state end
detach(ARGV[1])
release_dependents(ARGV[1], false, now_ms())
unindex(ARGV[1], state, f[2])
redis.call('DEL', k, base .. ':result:' .. ARGV[1])
return state
