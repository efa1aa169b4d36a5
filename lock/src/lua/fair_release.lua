-- fair_lock's release step (fair_scripts.hpp).
-- KEYS[1]  lock key   KEYS[2]  waiting list
-- ARGV[1]  token
-- ARGV[2]  optional: a waiter id to put back at the head (a give-back of an acquisition
--          that does not count)   ARGV[3]  with ARGV[2]: that waiter's lease in ms
-- Reply    1 when the key held the token and was deleted, else 0
-- Cost     O(1) plus dead waiters purged
local v = redis.call('GET', KEYS[1])
if not ours(v, ARGV[1]) then return 0 end
redis.call('DEL', KEYS[1])
notify_release(ARGV[1])
if ARGV[2] then
  redis.call('LPUSH', KEYS[2], ARGV[2])
  redis.call('SET', KEYS[1] .. ':waiter:' .. ARGV[2], '1', 'PX', ARGV[3])
  if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[3]) then redis.call('PEXPIRE', KEYS[2], ARGV[3]) end
  return 1
end
local head = live_head(KEYS[2], nil)
if head then wake(head) end
return 1
