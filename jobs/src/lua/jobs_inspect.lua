-- One queue at a glance for `redcoord inspect jobs`. Reads only; self-contained
-- (no jobs_prelude.lua).
-- KEYS[1]  the queue's base key `<prefix>jobs:{<name>}`
-- KEYS[2]  its scheduler election's selector hash (same hash tag)
-- Reply    {server ms, {counts: waiting (ungrouped and grouped), delayed, active, completed,
--           failed, dead, waiting_children}, the first ungrouped
--           waiting job's added ms or false, scheduler holder or false, epoch or false,
--           {{name, every, cron, zone, missed, last}...}, 1 when paused else 0,
--           {{group, waiting, active, limit (0: none)}...} by name, at most 1000 groups}
-- Cost     O(R + G log G) for R repeats and G groups (ZCARDs are O(1)).
local base = KEYS[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local counts = {}
for _, s in ipairs({'waiting', 'delayed', 'active', 'completed', 'failed', 'dead', 'waiting_children'}) do
  counts[#counts + 1] = redis.call('ZCARD', base .. ':' .. s)
end
counts[1] = counts[1] + tonumber(redis.call('GET', base .. ':gwaiting') or '0')
-- The groups with ready or active jobs, and those with a limit.
local names = {}
for _, g in ipairs(redis.call('SMEMBERS', base .. ':groups')) do names[g] = true end
for _, g in ipairs(redis.call('HKEYS', base .. ':glimit')) do names[g] = true end
local sorted = {}
for g in pairs(names) do sorted[#sorted + 1] = g end
table.sort(sorted)
local groups = {}
for i = 1, math.min(#sorted, 1000) do
  local g = sorted[i]
  groups[i] = {g, redis.call('ZCARD', base .. ':gw:' .. g),
               tonumber(redis.call('HGET', base .. ':gactive', g) or '0'),
               tonumber(redis.call('HGET', base .. ':glimit', g) or '0')}
end
local added = false
local first = redis.call('ZRANGE', base .. ':waiting', 0, 0)
if #first > 0 then added = redis.call('HGET', base .. ':job:' .. first[1], 'added') end
local holder = redis.call('HMGET', KEYS[2], 'holder', 'epoch')
local repeats = {}
for _, name in ipairs(redis.call('SMEMBERS', base .. ':repeats')) do
  local f = redis.call('HMGET', base .. ':repeat:' .. name, 'every', 'cron', 'tz', 'missed', 'last')
  if f[1] then repeats[#repeats + 1] = {name, f[1], f[2], f[3], f[4], f[5]} end
end
return {now, counts, added, holder[1], holder[2], repeats, redis.call('EXISTS', base .. ':paused'),
        groups}
