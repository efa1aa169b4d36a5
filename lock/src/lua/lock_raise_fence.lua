-- Fragment, prepended to the lock's acquire and release scripts (scripts.hpp).
-- Defines raise_fence(floor, ttl): raises the fencing counter KEYS[2] to `floor` (a released
-- token, as text) when it exists and stands below it. An absent counter is never created
-- from a floor: a floor can be old (a held-back release taken back long after), and a
-- counter created anew starts at the server's TIME (next_fence), which exceeds every token of
-- its previous life; raising it to an old floor gave tokens below ones already handed out.
-- KEYS[2]  the fencing counter of the including script
-- Cost     O(1)
local function raise_fence(floor, ttl)
  local f = tonumber(floor)
  if not f or f <= 0 then return end
  local cur = redis.call('GET', KEYS[2])
  if cur and (tonumber(cur) or 0) < f then redis.call('SET', KEYS[2], floor, 'PX', ttl) end
end
