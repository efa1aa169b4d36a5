-- Sets or clears a group's concurrency limit (format 2, docs/jobs.md#groups);
-- the next claims apply it (a raised limit puts the group back in the rotation at once).
-- KEYS[1]  the queue's base key
-- ARGV[1]  group   ARGV[2]  limit ('0': none)   ARGV[3]  wake channel
-- Reply    the previous limit (0: none)
-- Cost     O(log G) for G groups with ready jobs.
local g = ARGV[1]
local before = tonumber(redis.call('HGET', base .. ':glimit', g) or '0')
if ARGV[2] == '0' then
  redis.call('HDEL', base .. ':glimit', g)
else
  redis.call('HSET', base .. ':glimit', g, ARGV[2])
end
if group_has_room(g) and redis.call('EXISTS', base .. ':gw:' .. g) == 1 then
  group_ready(g)
  redis.call('PUBLISH', ARGV[3], 'w')
end
return before
