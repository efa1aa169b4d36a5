-- The repeatable jobs and the server's time. Reads only.
-- KEYS[1]  the queue's base key
-- Reply    {server now ms, {{name, every ms, cron, zone, missed, last tick ms}...}}
-- Cost     O(R) for R repeats.
local out = {}
for _, name in ipairs(redis.call('SMEMBERS', base .. ':repeats')) do
  local f = redis.call('HMGET', base .. ':repeat:' .. name, 'every', 'cron', 'tz', 'missed', 'last')
  if f[1] then out[#out + 1] = {name, f[1], f[2], f[3], f[4], f[5]} end
end
return {now_ms(), out}
