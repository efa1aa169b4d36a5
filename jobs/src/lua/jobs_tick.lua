-- Adds a repeat's due ticks as jobs `repeat:<name>:<tick ms>`, fenced by the
-- scheduler's election epoch, and moves the repeat's last tick on.
-- KEYS[1]  the queue's base key
-- KEYS[2]  the election's selector hash (same hash tag)
-- ARGV[1]  identity   ARGV[2]  epoch   ARGV[3]  repeat name   ARGV[4]  wake channel
-- ARGV[5..] tick times (ms, ascending)
-- Reply    the number of jobs added; error `FENCED ...` unless the caller leads under the epoch
-- Cost     O(t log N) for t ticks.
local f = redis.call('HMGET', KEYS[2], 'holder', 'epoch')
if f[1] ~= ARGV[1] or f[2] ~= ARGV[2] then
  return redis.error_reply('FENCED the scheduler is not the leader under epoch ' .. ARGV[2])
end
local rk = base .. ':repeat:' .. ARGV[3]
local v = redis.call('HMGET', rk, 'payload', 'o', 'timeout', 'deadline', 'last')
if not v[1] then return 0 end
local last = tonumber(v[5]) or 0
local now = now_ms()
local added = 0
local woke = false
local acc = {waiting = {}, delayed = {}}
for i = 5, #ARGV do
  local tick = tonumber(ARGV[i])
  if tick > last then
    local id = 'repeat:' .. ARGV[3] .. ':' .. ARGV[i]
    if redis.call('EXISTS', jk(id)) == 0 then
      if create(id, v[1], v[2], v[3], v[4], tick, now, acc) == 'waiting' then woke = true end
      added = added + 1
    end
    last = tick
  end
end
add_indexed(acc)
redis.call('HSET', rk, 'last', int(last))
if woke then redis.call('PUBLISH', ARGV[4], 'w') end
return added
