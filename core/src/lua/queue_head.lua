-- Fragment, prepended to the scripts that keep a FIFO waiting list of leased waiters
-- (fair_lock, the semaphore's fifo option). Defines queue_head(queue, me, alive): drops from
-- the head of the list `queue` the waiters other than `me` that alive(id) reports dead (their
-- lease lapsed: a waiter that died, or gave up without leaving), and returns the live head,
-- false when the list is empty.
-- Cost     O(dead waiters at the head)
local function queue_head(queue, me, alive)
  local head = redis.call('LINDEX', queue, 0)
  while head and head ~= me and not alive(head) do
    redis.call('LPOP', queue)
    head = redis.call('LINDEX', queue, 0)
  end
  return head
end
