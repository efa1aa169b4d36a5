-- Fragment, prepended to fair_lock's scripts (fair_scripts.hpp) after queue_head
-- (<redcoord/core/detail/queue_lua.hpp>). Defines live_head(queue, me): queue_head() whose
-- dead waiters are those whose lease key KEYS[1]:waiter:<id> is gone; wake(id): publishes
-- the turn on KEYS[1]:wake:<id>; ours(v, token): v is this non-empty token.
-- KEYS[1]  the lock key of the including script
-- Cost     live_head: O(dead waiters at the head)
local function live_head(queue, me)
  return queue_head(queue, me, function(id)
    return redis.call('EXISTS', KEYS[1] .. ':waiter:' .. id) == 1
  end)
end
local function wake(id)
  redis.call('PUBLISH', KEYS[1] .. ':wake:' .. id, 'turn')
end
local function ours(v, token)
  return v and #token > 0 and v == token
end
