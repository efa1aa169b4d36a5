-- Completes, fails or releases a worker's jobs (token-checked), and optionally
-- claims its next ones in the same call.
-- KEYS[1]  the queue's base key
-- ARGV[1]  result TTL ms (0: results not stored; empty ones never are)
-- ARGV[2]  keep ms (how long a completed job stays readable and its id deduplicates)
-- ARGV[3]  events channel      ARGV[4]  wake channel
-- ARGV[5]  '1' when the queue has a concurrency limit (a settlement wakes the workers)
-- ARGV[6]  the number of settlements S, then S times 6 values: kind ('c' completed, 'f'
--          failed, 'r' released: claimed, never started, back to waiting with its attempt
--          undone), id, claim token, text (result or failure reason), event (enveloped; ''
--          for 'r'), score for 'r' (its place in `:waiting`) or a uniform random for 'f';
--          then optionally '1' to skip the housekeeping, and jobs_claim's ARGV
-- Reply    {{per settlement: 'c' 1 | 0 (token no longer holds the job), 'f' new state |
--           false, 'r' 1 | 0}, then jobs_claim's reply when a claim was asked}
-- Cost     O(S log N) plus the claim's.
local now = now_ms()
local at = int(now)
local result_ttl, keep, events, wake = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local results = {}
local completed = {}
local freed = false
local released = false
local n = tonumber(ARGV[6])
-- The keys most queues never have, read in one call: no pause, no group with active or ready
-- jobs, no job waiting for dependencies. Then the per-job checks below and the claim's are
-- skipped (a grouped job in :active would have its group counted in :gactive, and a parent
-- listed in a job's :dependents waits in :waiting_children).
local plain = redis.call('EXISTS', base .. ':paused', base .. ':gready', base .. ':gactive',
                         base .. ':waiting_children') == 0
local any_grouped = not plain and redis.call('EXISTS', base .. ':gactive') == 1
local any_parents = not plain and redis.call('EXISTS', base .. ':waiting_children') == 1
-- The token check: the settlements whose member is in :active (each member once). A job
-- leaves :active only after it is in its next index (see housekeep()).
local held = {}
local seen = {}
for j = 0, n - 1 do
  local i = 7 + j * 6
  local m = active_member(ARGV[i + 2], ARGV[i + 1])
  if not seen[m] and redis.call('ZSCORE', base .. ':active', m) then
    held[j] = m
    if ARGV[i] == 'c' then
      completed[#completed + 1] = at
      completed[#completed + 1] = ARGV[i + 1]
    end
  end
  seen[m] = true
end
-- The index is trimmed by the claims' housekeeping (claim_next()).
if #completed > 0 then redis.call('ZADD', base .. ':completed', unpack(completed)) end
for j = 0, n - 1 do
  local i = 7 + j * 6
  local kind, id = ARGV[i], ARGV[i + 1]
  local r = 0
  if held[j] then
    local k = jk(id)
    freed = true
    -- Its group's active count first: a retry or release below may put the group back in
    -- the rotation. No `:gactive`: no grouped job is active, and ungrouped queues skip the read.
    local g = nil
    if any_grouped then
      g = redis.call('HGET', k, 'g')
      group_left_active(g)
    end
    if kind == 'c' then
      redis.call('HSET', k, 'state', 'completed', 'finished', at, 'error', '')
      if ARGV[i + 3] ~= '' and result_ttl ~= '0' then
        redis.call('SET', base .. ':result:' .. id, ARGV[i + 3], 'PX', result_ttl)
      end
      redis.call('PEXPIRE', k, keep)
      redis.call('PUBLISH', events, ARGV[i + 4])
      if any_parents then release_dependents(id, true, now) end
      r = 1
    elseif kind == 'f' then
      r = settle_failure(id, ARGV[i + 3], now, tonumber(ARGV[i + 5]), wake)
      redis.call('PUBLISH', events, ARGV[i + 4])
    else
      local attempts = tonumber(redis.call('HGET', k, 'attempts')) or 1
      ready_add(g, ARGV[i + 5], id)
      redis.call('HSET', k, 'state', 'waiting', 'attempts', int(attempts - 1))
      released = true
      r = 1
    end
    redis.call('ZREM', base .. ':active', held[j])
  elseif kind == 'f' then
    r = false
  end
  results[#results + 1] = r
end
if released or (freed and ARGV[5] == '1') then redis.call('PUBLISH', wake, 'w') end
local c = 7 + n * 6
if #ARGV > c then return {results, claim_next(c + 1, now, ARGV[c] == '1', plain)} end
return {results}
