-- rate_limiter: one GCRA decision on the server's clock (limit/src/gcra.hpp is the same
-- arithmetic, tested without a server; keep the two in step).
-- KEYS[1]  the theoretical arrival time (TAT) as "<whole us>:<fraction of a us>", server time,
--          then ":<interval>:<burst>" of the latest admission (read by inspect only)
-- ARGV[1]  emission interval in microseconds (period / rate; may be fractional)
-- ARGV[2]  burst: how many cost-1 requests may pass at once from idle
-- ARGV[3]  cost of this request (1 <= cost <= burst)
-- Cost     O(1)
-- Reply    {allowed 1|0, remaining, retry_after us, reset_after us}
-- The TAT is kept as whole microseconds plus a fraction, and the arithmetic runs on its lead
-- over now: a double holding the TAT itself (~1.7e15 us) would round each step to a quarter
-- microsecond, always the same way for a given interval, and so drift from the asked rate.
-- Only an allowed request writes: the TAT, with a PX that ends when the limiter is back to
-- full, so an idle limiter leaves no key.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2]) * interval
local cost = tonumber(ARGV[3])
local lead = 0
local v = redis.call('GET', KEYS[1])
if v then
  local w, f = string.match(v, '^(%d+):([^:]+)')
  if w and tonumber(f) then lead = (tonumber(w) - now) + tonumber(f) end
end
if lead < 0 then lead = 0 end
local new_lead = lead + cost * interval
if new_lead > capacity then
  return {0, math.max(0, math.floor((capacity - lead) / interval)),
          math.ceil(new_lead - capacity), math.ceil(lead)}
end
local whole = math.floor(new_lead)
redis.call('SET', KEYS[1],
           string.format('%.0f:%.17g:%s:%s', now + whole, new_lead - whole, ARGV[1], ARGV[2]),
           'PX', math.max(1, math.ceil(new_lead / 1000)))
return {1, math.max(0, math.floor((capacity - new_lead) / interval)), 0, math.ceil(new_lead)}
