-- Fragment, prepended to fair_lock's scripts (fair_scripts.hpp). Defines
-- live_head(queue, me): drops dead waiters (lease key KEYS[1]:waiter:<id> gone) from the head
-- of the waiting list `queue`, except `me`, and returns the live head; wake(id): publishes the
-- turn on KEYS[1]:wake:<id>; ours(v, token): v is this non-empty token.
-- KEYS[1]  the lock key of the including script
-- Cost     live_head: O(dead waiters at the head)
local function live_head(queue, me)
  local head = redis.call('LINDEX', queue, 0)
  while head and head ~= me and redis.call('EXISTS', KEYS[1] .. ':waiter:' .. head) == 0 do
    redis.call('LPOP', queue)
    head = redis.call('LINDEX', queue, 0)
  end
  return head
end
local function wake(id)
  redis.call('PUBLISH', KEYS[1] .. ':wake:' .. id, 'turn')
end
local function ours(v, token)
  return v and #token > 0 and v == token
end
