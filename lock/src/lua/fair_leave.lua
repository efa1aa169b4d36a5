-- fair_lock: a waiter leaves (gives up, or its call left after a lost reply).
-- KEYS[1]  lock key   KEYS[2]  waiting list
-- ARGV[1]  waiter id   ARGV[2]  the token of its attempt
-- ARGV[3]  optional: tombstone TTL in ms (KEYS[1]:gone:<token>)
-- Reply    1
-- Cost     O(waiting list) (LREM), plus dead waiters purged
redis.call('LREM', KEYS[2], 0, ARGV[1])
redis.call('DEL', KEYS[1] .. ':waiter:' .. ARGV[1])
local v = redis.call('GET', KEYS[1])
if ours(v, ARGV[2]) then
  redis.call('DEL', KEYS[1])
  notify_release(ARGV[2])
  v = false
elseif ARGV[3] then
  redis.call('SET', KEYS[1] .. ':gone:' .. ARGV[2], '1', 'PX', ARGV[3])
end
if not v then
  local head = live_head(KEYS[2], nil)
  if head then wake(head) end
end
return 1
