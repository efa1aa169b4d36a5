-- Requeues dead letters, oldest first, attempts reset to 0; each is pushed before it is
-- popped from the dead list.
-- KEYS[1]  dead-letter list   KEYS[2]  ready list
-- ARGV[1]  limit (0: all)   ARGV[2]  the queue's push channel (announces them, as a push)
-- Reply    how many were requeued
-- Cost     O(requeued)
local limit = tonumber(ARGV[1])
local n = 0
while limit == 0 or n < limit do
  local m = redis.call('LINDEX', KEYS[1], -1)
  if not m then break end
  if is_env(m) then m = string.sub(m, 1, 20) .. be(0, 4) .. string.sub(m, 25) end
  redis.call('LPUSH', KEYS[2], m)
  redis.call('RPOP', KEYS[1])
  n = n + 1
end
if n > 0 then redis.pcall('PUBLISH', ARGV[2], '') end
return n
