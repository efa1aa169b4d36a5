-- The holder resigns: deletes the selector, leaves the candidates and publishes the hand-over.
-- KEYS[1]  selector hash   KEYS[2]  candidates (election_campaign.lua)
-- ARGV[1]  identity   ARGV[2]  hand-over channel   ARGV[3]  instance nonce
-- Reply    1 when the caller held it and it is gone, else 0
-- Cost     O(log C) for C candidates
-- The caller leaves the candidates whether or not it held the selector: its next round, if
-- any, adds it again.
redis.call('ZREM', KEYS[2], ARGV[1])
local f = redis.call('HMGET', KEYS[1], 'holder', 'nonce')
if f[1] == ARGV[1] and f[2] == ARGV[3] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], ARGV[1])
  return 1
end
return 0
