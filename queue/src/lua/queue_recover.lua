-- Recovery: reclaims the processing list of every consumer whose heartbeat is gone.
-- KEYS[1]  consumers set   KEYS[2]  ready list   KEYS[3]  dead-letter list
-- ARGV[1]  processing key prefix   ARGV[2]  heartbeat key prefix (both + consumer id: the
--          queue's hash tag, so the same slot)   ARGV[3]  max attempts   ARGV[4]  nonce
-- ARGV[5]  now   ARGV[6]  the queue's push channel (announces requeued messages, as a push)
-- Reply    {requeued, dead-lettered, consumers removed}
-- Cost     O(consumers + messages reclaimed)
local max = tonumber(ARGV[3])
local req, dl, gone, idx = 0, 0, 0, 0
local members = redis.call('SMEMBERS', KEYS[1])
for _, c in ipairs(members) do
  if redis.call('EXISTS', ARGV[2] .. c) == 0 then
    local r, d
    r, d, idx = reclaim(ARGV[1] .. c, KEYS[2], KEYS[3], max, ARGV[4], ARGV[5], idx)
    req = req + r
    dl = dl + d
    gone = gone + 1
    redis.call('SREM', KEYS[1], c)
  end
end
if req > 0 then redis.pcall('PUBLISH', ARGV[6], '') end
return {req, dl, gone}
