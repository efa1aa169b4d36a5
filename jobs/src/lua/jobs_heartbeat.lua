-- Extends the visibility of a worker's held jobs to min(now + lease, the
-- job's timeout end). A lapsed lease is not renewed: it is the next claim's to take back
-- (the worker has fired the job's stop token by then, and a heartbeat that waited out a pause
-- in a socket buffer would otherwise make the job its own again).
-- KEYS[1]  the queue's base key
-- ARGV[1]  lease ms, then pairs ARGV[i] job id, ARGV[i+1] claim token
-- Reply    per pair: 1 held, 0 lost (reclaimed, settled elsewhere, lease lapsed), 2 held but
--          cancelled (stop it)
-- Cost     O(n log N) for n pairs.
local now = now_ms()
local out = {}
for i = 2, #ARGV, 2 do
  local m = active_member(ARGV[i + 1], ARGV[i])
  local held = tonumber(redis.call('ZSCORE', base .. ':active', m))
  if not held or held <= now then
    out[#out + 1] = 0
  else
    local f = redis.call('HMGET', jk(ARGV[i]), 'ends', 'cancel')
    local visible = now + tonumber(ARGV[1])
    local ends = tonumber(f[1]) or 0
    if ends > 0 and ends < visible then visible = ends end
    redis.call('ZADD', base .. ':active', 'XX', int(visible), m)
    out[#out + 1] = f[2] == '1' and 2 or 1
  end
end
return out
