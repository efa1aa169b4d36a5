-- fair_lock's acquire step (fair_scripts.hpp).
-- KEYS[1]  lock key   KEYS[2]  fencing counter   KEYS[3]  waiting list (FIFO of waiter ids)
-- ARGV[1]  waiter id   ARGV[2]  token   ARGV[3]  TTL in ms   ARGV[4]  waiter lease in ms
-- ARGV[5]  "q" join or stay in the queue and refresh the lease; "l" refused, leave it
-- Reply    acquired: the fencing token; refused: {0, PTTL of the holder, queue position or
--          -1, the woken head's lease left in ms or -1}; a tombstoned token: {0, -1, -1, -1}
-- Cost     O(waiting list) (LPOS), plus dead waiters purged
local me = ARGV[1]
if redis.call('EXISTS', KEYS[1] .. ':gone:' .. ARGV[2]) == 1 then
  -- This call left after losing this attempt's reply: take nothing, queue nothing.
  return {0, -1, -1, -1}
end
local head = live_head(KEYS[3], me)
local v = redis.call('GET', KEYS[1])
if ours(v, ARGV[2]) or (not v and (not head or head == me)) then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  if head == me then redis.call('LPOP', KEYS[3]) end
  redis.call('DEL', KEYS[1] .. ':waiter:' .. me)
  return next_fence(ARGV[3])
end
local pttl = -2
if v then pttl = redis.call('PTTL', KEYS[1]) end
local pos = -1
if ARGV[5] == 'q' then
  pos = redis.call('LPOS', KEYS[3], me)
  if not pos then pos = redis.call('RPUSH', KEYS[3], me) - 1 end
  redis.call('SET', KEYS[1] .. ':waiter:' .. me, '1', 'PX', ARGV[4])
  if redis.call('PTTL', KEYS[3]) < tonumber(ARGV[4]) then redis.call('PEXPIRE', KEYS[3], ARGV[4]) end
else
  redis.call('LREM', KEYS[3], 0, me)
  redis.call('DEL', KEYS[1] .. ':waiter:' .. me)
  head = live_head(KEYS[3], me)
end
local head_lease = -1
if not v and head and head ~= me then
  wake(head)
  head_lease = redis.call('PTTL', KEYS[1] .. ':waiter:' .. head)
end
return {0, pttl, pos, head_lease}
