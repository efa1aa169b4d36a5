-- Fragment, prepended to every script that hands out fencing tokens (locks, semaphores).
-- Defines next_fence(ttl): the next token from the counter KEYS[2], which lives for `ttl` ms
-- after it is created; created anew, its first token is the server's TIME in microseconds
-- (detail/fence_lua.hpp says why that keeps tokens increasing across its expiry).
-- KEYS[2]  the fencing counter of the including script
-- Cost     O(1)
local function next_fence(ttl)
  local f = redis.call('INCR', KEYS[2])
  if f == 1 then
    local t = redis.call('TIME')
    f = tonumber(t[1]) * 1000000 + tonumber(t[2])
    redis.call('SET', KEYS[2], string.format('%.0f', f), 'PX', ttl)
  end
  return f
end
