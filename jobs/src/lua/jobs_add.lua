-- Adds jobs (format 1, docs/jobs-wire.md); a known id adds nothing (dedup).
-- Runs after jobs_prelude.lua.
-- KEYS[1]  the queue's base key `<prefix>jobs:{<name>}`
-- ARGV[1]  the wake channel `<base>:wake` (published once when any job was added)
-- then per job 7 values, ARGV[i..i+6]:
--   id; payload (any bytes); options `o` ("priority max-attempts kind base-ms max-ms
--   jitter", kind `e` exponential or `f` fixed); timeout ms ('0': none); delay ms; run-at
--   epoch ms ('0': none, else overrides the delay); deadline ms from now ('0': none)
-- Reply    per job two entries: 1 (added) | 0 (an earlier job with this id exists), its state
-- Cost     O(n log N) for n jobs on a queue of N.
local out = {}
local now = now_ms()
local woke = false
local acc = {waiting = {}, delayed = {}}
for i = 2, #ARGV, 7 do
  local id = ARGV[i]
  local k = jk(id)
  if redis.call('EXISTS', k) == 1 then
    out[#out + 1] = 0
    out[#out + 1] = redis.call('HGET', k, 'state')
  else
    local due = now + tonumber(ARGV[i + 4])
    if ARGV[i + 5] ~= '0' then due = tonumber(ARGV[i + 5]) end
    local state = create(id, ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 6], due, now, acc)
    -- A delayed job too: an idle worker sleeping until a later due time must learn this one.
    woke = true
    out[#out + 1] = 1
    out[#out + 1] = state
  end
end
add_indexed(acc)
if woke then redis.call('PUBLISH', ARGV[1], 'w') end
return out
