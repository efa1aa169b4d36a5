-- A waiting, delayed or waiting_children job fails at once; an active one is
-- flagged (`cancel` 1) and its id published on the cancel channel, so its worker stops it.
-- A failed job fails the jobs that wait for it (unless they ignore failed dependencies).
-- A cancelled waiting_children job cancels its dependencies that have not started
-- (waiting, delayed or waiting_children) and that no other job waits for, down its flow.
-- KEYS[1]  the queue's base key
-- ARGV[1]  job id   ARGV[2]  cancel channel `<base>:cancel`
-- Reply    the state the job was in, or false for no such job
-- Cost     O(log N) per job cancelled.
local now = now_ms()
local function cancel(id)
  local k = jk(id)
  local f = redis.call('HMGET', k, 'state', 'g')
  local state = f[1]
  if not state then return false end
  if state == 'waiting' or state == 'delayed' or state == 'waiting_children' then
    local children = redis.call('SMEMBERS', base .. ':deps:' .. id)
    detach(id)
    -- Into :failed before out of its index (see housekeep()).
    finish(id, 'failed', 'cancelled', now)
    unindex(id, state, f[2])
    for _, c in ipairs(children) do
      local cs = redis.call('HGET', jk(c), 'state')
      if (cs == 'waiting' or cs == 'delayed' or cs == 'waiting_children')
          and redis.call('SCARD', base .. ':dependents:' .. c) == 0 then
        cancel(c)
      end
    end
  elseif state == 'active' then
    redis.call('HSET', k, 'cancel', '1')
    redis.call('PUBLISH', ARGV[2], id)
  end
  return state
end
return cancel(ARGV[1])
