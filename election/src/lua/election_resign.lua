-- The holder resigns: deletes the selector and publishes the hand-over.
-- KEYS[1]  selector hash
-- ARGV[1]  identity   ARGV[2]  hand-over channel   ARGV[3]  instance nonce
-- Reply    1 when the caller held it and it is gone, else 0
-- Cost     O(1)
local f = redis.call('HMGET', KEYS[1], 'holder', 'nonce')
if f[1] == ARGV[1] and f[2] == ARGV[3] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], ARGV[1])
  return 1
end
return 0
