-- semaphore: extend one acquisition's leases (see semaphore_engine.hpp). All n or none: when
-- a lease has ended, the holding is lost and its other permits are released.
-- KEYS[1]  holders (see semaphore_acquire.lua)
-- KEYS[2]  the waiting flag (as semaphore_release.lua)
-- ARGV[1]  token, ARGV[2] n, ARGV[3] ttl in ms
-- Cost     O(n log holders)
-- Reply    1 when extended, 0 when the holding was lost
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local n, ttl = tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
for i = 1, n do
  if not redis.call('ZSCORE', KEYS[1], ARGV[1] .. ':' .. i) then
    local removed = 0
    for j = 1, n do removed = removed + redis.call('ZREM', KEYS[1], ARGV[1] .. ':' .. j) end
    if removed > 0 and redis.call('EXISTS', KEYS[2]) == 1 then
      redis.call('PUBLISH', KEYS[1] .. ':released', 'released')
    end
    return 0
  end
end
local ends = now + ttl * 1000
for i = 1, n do redis.call('ZADD', KEYS[1], 'XX', ends, ARGV[1] .. ':' .. i) end
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
local lives = math.ceil((tonumber(last[2]) - now) / 1000)
redis.call('PEXPIRE', KEYS[1], lives)
redis.call('PEXPIRE', KEYS[1] .. ':permits', lives)  -- N, kept for inspect
return 1
