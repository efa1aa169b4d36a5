-- Fragment, prepended to every jobs_*.lua script but jobs_inspect (by the build, and by a
-- producer in another language: docs/jobs-wire.md). Defines the helpers they share.
-- KEYS[1]  the queue's base key `<prefix>jobs:{<name>}`: every other key of the queue is built
--          from it here (`:job:<id>`, `:waiting`, `:delayed`, `:active`, `:completed`,
--          `:failed`, `:dead`, `:result:<id>`, `:seq`, `:paused`, `:rate`, `:repeats`,
--          `:repeat:<name>`) and shares its hash tag, so its Cluster slot.
-- ARGV[1]  read by add_jobs only (the add scripts): the wake channel; their per-job values
--          follow from ARGV[2]
-- Ready jobs sit in `:waiting` scored by (9 - priority) * 2^40 + a sequence number: the
-- highest priority first, FIFO within a level. The back-off mirrors backoff_policy::delay()
-- (jobs/backoff.hpp) with the policy stored in the job's options field `o`.
-- Times are the server's (TIME, in ms): due times and visibility deadlines are compared by
-- every process of the queue. Values arrive as ARGV only.
-- Cost     O(1) (defines functions; their costs are the including scripts')
local base = KEYS[1]
local function jk(id) return base .. ':job:' .. id end
-- Numbers go to redis.call as integer text: Lua's own conversion of a number argument is a
-- %.17g format, several times the cost of the command it feeds.
local function int(n) return string.format('%d', n) end
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- Sequence numbers (FIFO within a priority level) are taken from the counter 64 at a time:
-- one INCRBY per script call instead of one INCR per job (a call's unused ones are skipped).
local seq_next, seq_last = 1, 0
local function next_seq()
  if seq_next > seq_last then
    seq_last = redis.call('INCRBY', base .. ':seq', 64)
    seq_next = seq_last - 63
  end
  seq_next = seq_next + 1
  return seq_next - 1
end
-- A job's options travel and rest as one field `o`: "priority max-attempts back-off-kind
-- base-ms max-ms jitter" (job_queue.cpp writes it), read whole by the worker.
-- A malformed field (not written by this version) reads as priority 0 and one attempt, so
-- such a job ends dead instead of failing every script that touches it.
local function priority_of(o) return tonumber(string.match(o or '', '^(%d+)')) or 0 end
-- Groups (format 2, docs/jobs.md#groups). A job with a group `g` (hash field `g`) waits
-- ready in `:gw:<g>` (same scores as `:waiting`, which keeps the ungrouped jobs only);
-- `:gwaiting` counts the ready jobs of all groups. `:gready` holds the groups with ready
-- jobs and room under their limit, scored by their turn: claims take from the group (or the
-- ungrouped lane, whose turn is `:uturn`) with the lowest turn and move it to the back
-- (`:turn` the last turn given), so groups take turns whatever their sizes. `:glimit` maps a
-- group to its concurrency limit (absent: none), `:gactive` to its active jobs, and `:groups`
-- lists the groups that have ready or active jobs (for inspect).
local turn_cache
local function current_turn()
  if not turn_cache then turn_cache = tonumber(redis.call('GET', base .. ':turn') or '0') end
  return turn_cache
end
local function grouped(g) return g and g ~= '' end
local function group_has_room(g)
  local limit = tonumber(redis.call('HGET', base .. ':glimit', g) or '0')
  return limit <= 0 or tonumber(redis.call('HGET', base .. ':gactive', g) or '0') < limit
end
-- Puts `g` in the rotation (at the current turn, unless it is in already) when it has ready
-- jobs and room under its limit.
local function group_ready(g)
  if redis.call('EXISTS', base .. ':gw:' .. g) == 1 and group_has_room(g) then
    redis.call('ZADD', base .. ':gready', 'NX', int(current_turn()), g)
  end
end
-- Forgets an idle group (no ready and no active jobs) in `:groups`; its limit stays.
local function group_idle(g)
  if redis.call('EXISTS', base .. ':gw:' .. g) == 0 and
      tonumber(redis.call('HGET', base .. ':gactive', g) or '0') <= 0 then
    redis.call('HDEL', base .. ':gactive', g)
    redis.call('SREM', base .. ':groups', g)
  end
end
-- A job of `g` left `:active` (settled, released or reclaimed).
local function group_left_active(g)
  if not grouped(g) then return end
  if redis.call('HINCRBY', base .. ':gactive', g, -1) <= 0 then
    redis.call('HDEL', base .. ':gactive', g)
  end
  group_ready(g)
  group_idle(g)
end
-- Ready-index writes: `:waiting` for ungrouped jobs, `:gw:<g>` for grouped ones.
local function ready_add(g, score, id)
  if not grouped(g) then
    redis.call('ZADD', base .. ':waiting', score, id)
    return
  end
  local n = redis.call('ZADD', base .. ':gw:' .. g, score, id)
  if n > 0 then redis.call('INCRBY', base .. ':gwaiting', n) end
  redis.call('SADD', base .. ':groups', g)
  group_ready(g)
end
local function ready_rem(g, ids)
  if not grouped(g) then
    redis.call('ZREM', base .. ':waiting', unpack(ids))
    return
  end
  local n = redis.call('ZREM', base .. ':gw:' .. g, unpack(ids))
  if n > 0 then redis.call('DECRBY', base .. ':gwaiting', n) end
  if redis.call('EXISTS', base .. ':gw:' .. g) == 0 then
    redis.call('ZREM', base .. ':gready', g)
    group_idle(g)
  end
end
-- Out of the index of `state` (a ready job: of its group's).
local function unindex(id, state, g)
  if state == 'waiting' then ready_rem(g, {id}) else redis.call('ZREM', base .. ':' .. state, id) end
end
local function enqueue(id, priority, g)
  ready_add(g, int((9 - priority) * 1099511627776 + next_seq()), id)
end
-- A new job due at `due` (server ms), ready or delayed. Zero timeouts and deadlines are left
-- out of the hash (absent reads as none), as are attempts until the first claim. The index
-- entries go to `acc` ({waiting = {score, id, ...}, delayed = {...}}): add_indexed() writes
-- each index with one ZADD for a whole batch.
local function create(id, payload, o, timeout, deadline, due, now, acc, g, ddu)
  local state = due > now and 'delayed' or 'waiting'
  local f = {'payload', payload, 'o', o, 'added', int(now), 'state', state}
  if timeout ~= '0' then f[#f + 1] = 'timeout' f[#f + 1] = timeout end
  if tonumber(deadline) > 0 then f[#f + 1] = 'deadline' f[#f + 1] = int(now + tonumber(deadline)) end
  if grouped(g) then f[#f + 1] = 'g' f[#f + 1] = g end
  if ddu then f[#f + 1] = 'ddu' f[#f + 1] = int(ddu) end
  redis.call('HSET', jk(id), unpack(f))
  if state == 'waiting' and grouped(g) then
    enqueue(id, priority_of(o), g)
    return state
  end
  local list = acc[state]
  if state == 'delayed' then
    list[#list + 1] = int(due)
  else
    list[#list + 1] = int((9 - priority_of(o)) * 1099511627776 + next_seq())
  end
  list[#list + 1] = id
  return state
end
local function add_indexed(acc)
  for state, list in pairs(acc) do
    if #list > 0 then redis.call('ZADD', base .. ':' .. state, unpack(list)) end
  end
end
-- The most dependencies of one job (job_queue.hpp: max_job_dependencies).
local max_deps = 1000
local function split_ids(text)
  local ids = {}
  if text and text ~= '' then
    for d in string.gmatch(text, '[^\n]+') do ids[#ids + 1] = d end
  end
  return ids
end
-- A new job with dependencies (`deps` LF-joined ids, `ondep` 'i' to ignore failed ones): one
-- of them already failed (not ignored) fails it at once, all completed ones create it as
-- any job, else it waits in `:waiting_children` (see release_dependents()).
local function create_flow(id, a, deps, ondep, due, now, acc)
  local pending, failed = {}, nil
  for _, d in ipairs(deps) do
    local st = redis.call('HGET', jk(d), 'state')
    if st == 'failed' or st == 'dead' then
      if ondep ~= 'i' and not failed then failed = d end
    elseif st ~= 'completed' then
      pending[#pending + 1] = d
    end
  end
  if not failed and #pending == 0 then
    local state = create(id, a[1], a[2], a[3], a[6], due, now, acc, a[7], a[8])
    redis.call('HSET', jk(id), 'deps', table.concat(deps, '\n'), 'ondep', ondep)
    return state
  end
  local state = failed and 'failed' or 'waiting_children'
  local f = {'payload', a[1], 'o', a[2], 'added', int(now), 'state', state,
             'deps', table.concat(deps, '\n'), 'ondep', ondep, 'due', int(due)}
  if a[3] ~= '0' then f[#f + 1] = 'timeout' f[#f + 1] = a[3] end
  if tonumber(a[6]) > 0 then f[#f + 1] = 'deadline' f[#f + 1] = int(now + tonumber(a[6])) end
  if grouped(a[7]) then f[#f + 1] = 'g' f[#f + 1] = a[7] end
  if a[8] then f[#f + 1] = 'ddu' f[#f + 1] = int(a[8]) end
  if failed then
    f[#f + 1] = 'finished' f[#f + 1] = int(now)
    f[#f + 1] = 'error' f[#f + 1] = 'dependency ' .. failed .. ' failed'
  end
  redis.call('HSET', jk(id), unpack(f))
  acc[state] = acc[state] or {}
  local list = acc[state]
  list[#list + 1] = int(now)
  list[#list + 1] = id
  if not failed then
    redis.call('SADD', base .. ':deps:' .. id, unpack(pending))
    for _, d in ipairs(pending) do redis.call('SADD', base .. ':dependents:' .. d, id) end
  end
  return state
end
-- The add scripts: ARGV[1] the wake channel, then `stride` values per job: the 7 of format 1
-- (jobs_add.lua); with stride 9 (jobs_add_flow.lua) the dependencies (LF-joined ids, ''
-- none) and 'f' | 'i' (fail or ignore on a failed dependency); with stride 12 (format 2,
-- jobs_add2.lua) also the group ('' none), the dedupe window ms and the debounce ms ('0':
-- none). Every dependency must be a known job or an earlier one of the same call: checked for
-- all jobs before anything is written (error `UNKNOWNDEP <job> <dependency>`, the job's place
-- in the call from 1 and the dependency's in its list), so a bad job leaves the call without
-- a trace. A dependency of a later job in the call is unknown, so no call can make a cycle.
-- Debounce on a known job that has started or waits for dependencies is refused the same way
-- (error `JOBSTARTED <job> <state>`).
local finished_states = {completed = true, failed = true, dead = true}
-- The replacement of a debounced job (waiting or delayed): the new payload and options, and
-- delayed until `due` whatever it was.
local function debounce(id, state, a, due, now)
  local k = jk(id)
  local old_g = redis.call('HGET', k, 'g')
  -- Into :delayed before out of its ready index (see housekeep()).
  redis.call('ZADD', base .. ':delayed', int(due), id)
  if state == 'waiting' then ready_rem(old_g, {id}) end
  redis.call('HSET', k, 'payload', a[1], 'o', a[2], 'state', 'delayed')
  local drop = {}
  if a[3] ~= '0' then redis.call('HSET', k, 'timeout', a[3]) else drop[#drop + 1] = 'timeout' end
  if tonumber(a[6]) > 0 then
    redis.call('HSET', k, 'deadline', int(now + tonumber(a[6])))
  else
    drop[#drop + 1] = 'deadline'
  end
  if grouped(a[7]) then redis.call('HSET', k, 'g', a[7]) else drop[#drop + 1] = 'g' end
  if a[8] then redis.call('HSET', k, 'ddu', int(a[8])) else drop[#drop + 1] = 'ddu' end
  if #drop > 0 then redis.call('HDEL', k, unpack(drop)) end
  return 'delayed'
end
-- A finished job whose dedupe window passed: forgotten, so its id is accepted again.
local function forget(id, state)
  redis.call('ZREM', base .. ':' .. state, id)
  redis.call('DEL', jk(id), base .. ':result:' .. id)
end
local function add_jobs(stride)
  local out = {}
  local now = now_ms()
  local woke = false
  local acc = {waiting = {}, delayed = {}}
  local deps = {}
  if stride > 7 then
    local earlier = {}
    for i = 2, #ARGV, stride do
      local id = ARGV[i]
      local list = split_ids(ARGV[i + 7])
      if #list > max_deps then
        return redis.error_reply('TOOMANYDEPS ' .. int((i - 2) / stride + 1))
      end
      local st = redis.call('HGET', jk(id), 'state')
      if not st then
        for n, d in ipairs(list) do
          if not earlier[d] and redis.call('EXISTS', jk(d)) == 0 then
            return redis.error_reply('UNKNOWNDEP ' .. int((i - 2) / stride + 1) .. ' ' .. int(n))
          end
        end
      elseif stride >= 12 and tonumber(ARGV[i + 11]) > 0 and
          (st == 'active' or st == 'waiting_children') then
        return redis.error_reply('JOBSTARTED ' .. int((i - 2) / stride + 1) .. ' ' .. st)
      end
      earlier[id] = true
      deps[i] = list
    end
  end
  for i = 2, #ARGV, stride do
    local id = ARGV[i]
    local k = jk(id)
    local due = now + tonumber(ARGV[i + 4])
    if ARGV[i + 5] ~= '0' then due = tonumber(ARGV[i + 5]) end
    local a = {ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5], ARGV[i + 6]}
    if stride >= 12 then
      a[7] = ARGV[i + 9]
      if tonumber(ARGV[i + 10]) > 0 then a[8] = now + tonumber(ARGV[i + 10]) end
      local bounce = tonumber(ARGV[i + 11])
      if bounce > 0 and due < now + bounce then due = now + bounce end
    end
    local f = redis.call('HMGET', k, 'state', 'ddu')
    local st = f[1]
    if st and finished_states[st] and f[2] and now >= tonumber(f[2]) then
      forget(id, st)
      st = nil
    end
    if st and stride >= 12 and tonumber(ARGV[i + 11]) > 0 and
        (st == 'waiting' or st == 'delayed') then
      out[#out + 1] = 2
      out[#out + 1] = debounce(id, st, a, due, now)
      woke = true
    elseif st then
      out[#out + 1] = 0
      out[#out + 1] = st
    else
      local state
      if deps[i] and #deps[i] > 0 then
        state = create_flow(id, a, deps[i], ARGV[i + 8], due, now, acc)
      else
        state = create(id, a[1], a[2], a[3], a[6], due, now, acc, a[7], a[8])
      end
      -- A delayed job too: an idle worker sleeping until a later due time must learn this one.
      woke = true
      out[#out + 1] = 1
      out[#out + 1] = state
    end
  end
  add_indexed(acc)
  if woke then redis.call('PUBLISH', ARGV[1], 'w') end
  return out
end
-- Flows (docs/jobs.md#flows). A job added with dependencies that are not all completed
-- waits in `:waiting_children` (scored by its add time) with the set `:deps:<id>` of the
-- dependencies it still waits for; each such dependency lists it in `:dependents:<id>`. Its
-- hash keeps them all in `deps` (ids joined by LF, which names never hold), `ondep` `i` when a
-- failed dependency is ignored, and `due` (server ms) for when it is released. Every script
-- that ends a job calls the release below in the same call, so a parent is never released
-- before its last dependency's end is written, nor left behind by it.
local finish
local function detach(id)
  local dk = base .. ':deps:' .. id
  for _, d in ipairs(redis.call('SMEMBERS', dk)) do
    redis.call('SREM', base .. ':dependents:' .. d, id)
  end
  redis.call('DEL', dk)
end
-- `id` ended: completed (`ok`) or failed/dead. Its waiting dependents are released when it
-- was their last dependency (into `:waiting`, or `:delayed` until their own due time), or
-- failed when it failed and they do not ignore that (which cascades to theirs).
local function release_dependents(id, ok, now)
  local pk = base .. ':dependents:' .. id
  local parents = redis.call('SMEMBERS', pk)
  if #parents == 0 then return end
  redis.call('DEL', pk)
  for _, p in ipairs(parents) do
    local k = jk(p)
    local f = redis.call('HMGET', k, 'state', 'ondep', 'due', 'o', 'g')
    if f[1] == 'waiting_children' then
      local dk = base .. ':deps:' .. p
      redis.call('SREM', dk, id)
      if not ok and f[2] ~= 'i' then
        detach(p)
        finish(p, 'failed', 'dependency ' .. id .. ' failed', now)
        redis.call('ZREM', base .. ':waiting_children', p)
      elseif redis.call('SCARD', dk) == 0 then
        local due = tonumber(f[3]) or 0
        if due > now then
          redis.call('ZADD', base .. ':delayed', int(due), p)
          redis.call('HSET', k, 'state', 'delayed')
        else
          enqueue(p, priority_of(f[4]), f[5])
          redis.call('HSET', k, 'state', 'waiting')
        end
        redis.call('ZREM', base .. ':waiting_children', p)
        redis.call('PUBLISH', base .. ':wake', 'w')
      end
    end
  end
end
-- Index first, then the hash's state: a failed ZADD leaves the job as it was (housekeep()).
-- A failed or dead job fails (or releases) the jobs that wait for it.
finish = function(id, state, reason, now)
  redis.call('ZADD', base .. ':' .. (state == 'dead' and 'dead' or 'failed'), int(now), id)
  redis.call('HSET', jk(id), 'state', state, 'finished', int(now), 'error', reason)
  release_dependents(id, false, now)
end
local function backoff(o, attempts, u)
  local kind, d, max, jitter = string.match(o, '^%d+ %d+ (%a) (%d+) (%d+) (%S+)$')
  d = tonumber(d) or 0
  max = tonumber(max) or d
  if kind == 'e' then
    for _ = 2, attempts do
      if d >= max then break end
      d = math.min(d * 2, max)
    end
  end
  jitter = tonumber(jitter) or 0
  if jitter > 0 and d > 0 then d = d - math.floor(d * jitter * u) end
  return d
end
-- A failed attempt (its active entry already removed): cancelled jobs fail for good,
-- exhausted ones go dead, others wait their back-off (or are ready at once).
local function settle_failure(id, reason, now, u, wake)
  local k = jk(id)
  local f = redis.call('HMGET', k, 'attempts', 'o', 'cancel', 'g')
  if f[3] == '1' then finish(id, 'failed', 'cancelled', now) return 'failed' end
  local attempts = tonumber(f[1]) or 0
  if attempts >= (tonumber(string.match(f[2] or '', '^%d+ (%d+)')) or 1) then
    finish(id, 'dead', reason, now)
    return 'dead'
  end
  local d = backoff(f[2], attempts, u)
  local state = d > 0 and 'delayed' or 'waiting'
  if d > 0 then
    redis.call('ZADD', base .. ':delayed', int(now + d), id)
  else
    enqueue(id, priority_of(f[2]), f[4])
  end
  redis.call('HSET', k, 'state', state, 'error', reason)
  redis.call('PUBLISH', wake, 'w')
  return state
end
-- Active jobs are members "<claim token>:<id>" of `:active` (tokens are hex), so the member's
-- presence is the token check of a settlement.
local function active_member(token, id) return token .. ':' .. id end
local function active_id(member) return string.match(member, '^[^:]*:(.*)$') end
-- Housekeeping: promotes due delayed jobs, reclaims stalled ones (a dead or paused worker's,
-- whose lease lapsed, or a timed-out one's) and trims the completed jobs older than `keep` ms
-- (their hashes expire by themselves) from the index. Returns the reclaimed ids.
-- Jobs enter their new index before they leave the old one: Redis keeps a script's writes up
-- to an error, so the other order would leave a job in no index when the second write fails.
local function housekeep(now, u, wake, keep)
  if keep and keep > 0 then
    redis.call('ZREMRANGEBYSCORE', base .. ':completed', '-inf', int(now - keep))
  end
  local due = redis.call('ZRANGEBYSCORE', base .. ':delayed', '-inf', int(now), 'LIMIT', 0, 100)
  if #due > 0 then
    for _, id in ipairs(due) do
      local k = jk(id)
      local f = redis.call('HMGET', k, 'o', 'g')
      enqueue(id, priority_of(f[1]), f[2])
      redis.call('HSET', k, 'state', 'waiting')
    end
    redis.call('ZREM', base .. ':delayed', unpack(due))
  end
  local members = redis.call('ZRANGEBYSCORE', base .. ':active', '-inf', int(now), 'LIMIT', 0, 100)
  local stalled = {}
  if #members == 0 then return stalled end
  for i, m in ipairs(members) do
    stalled[i] = active_id(m)
    group_left_active(redis.call('HGET', jk(stalled[i]), 'g'))
    settle_failure(stalled[i], 'stalled: its worker was lost or its timeout passed', now, u, wake)
  end
  redis.call('ZREM', base .. ':active', unpack(members))
  return stalled
end
-- One ready job looked at by a claim: nil when it ends the batch (beyond the first, a job
-- with a timeout or a deadline would wait behind the others), false when it failed past its
-- deadline, else its hash write {key, fields}, its `:active` score and its reply entry.
local function examine(id, score, taken, now, c)
  local k = jk(id)
  local f = redis.call('HMGET', k, 'payload', 'o', 'timeout', 'deadline', 'attempts', 'deps')
  local deadline = tonumber(f[4])
  if taken > 0 and (f[3] or f[4]) then return nil end
  if deadline and deadline <= now then
    finish(id, 'failed', 'deadline passed before it could run', now)
    return false
  end
  local attempts = (tonumber(f[5]) or 0) + 1
  local visible = c.lease
  local timeout = tonumber(f[3]) or 0
  local h = {'state', 'active', 'worker', c.worker, 'started', c.started, 'attempts', int(attempts)}
  if timeout > 0 then
    local ends = now + timeout
    if ends < visible then visible = ends end
    h[#h + 1] = 'ends'
    h[#h + 1] = int(ends)
  end
  local entry = {id, f[1], attempts, f[2], f[3] or '0', score}
  if f[6] then
    -- A flow's job gets its dependencies' stored results: {id, result or false, ...}.
    local results = {}
    for _, d in ipairs(split_ids(f[6])) do
      results[#results + 1] = d
      results[#results + 1] = redis.call('GET', base .. ':result:' .. d)
    end
    entry[7] = results
  end
  return {k, h}, int(visible), entry
end
-- Claims with groups (`:gready` not empty): one job at a time from the lane (a group, or the
-- ungrouped jobs) whose turn is lowest, which then goes to the back, so within one claim the
-- lanes take turns; a group at its limit leaves the rotation until one of its jobs ends.
local function claim_rotation(want, now, c, out)
  local turn = current_turn()
  local uturn = tonumber(redis.call('GET', base .. ':uturn') or '0')
  local ungrouped = true
  local taken = 0
  while taken < want do
    local top = redis.call('ZRANGE', base .. ':gready', 0, 0, 'WITHSCORES')
    local g = top[1]
    local lane
    if ungrouped and (not g or uturn <= tonumber(top[2])) then
      lane = base .. ':waiting'
      g = nil
    elseif not g then
      break
    elseif group_has_room(g) then
      lane = base .. ':gw:' .. g
    else
      redis.call('ZREM', base .. ':gready', g)
    end
    local j = lane and redis.call('ZRANGE', lane, 0, 0, 'WITHSCORES') or {}
    if lane and #j == 0 then
      if g then redis.call('ZREM', base .. ':gready', g) else ungrouped = false end
    elseif lane then
      local h, visible, entry = examine(j[1], j[2], taken, now, c)
      if h == nil then break end
      -- Into :active before out of the ready index (see housekeep()).
      if h then
        redis.call('ZADD', base .. ':active', visible, active_member(c.token, j[1]))
        redis.call('HSET', h[1], unpack(h[2]))
        if g then redis.call('HINCRBY', base .. ':gactive', g, 1) end
        out[#out + 1] = entry
        taken = taken + 1
      end
      ready_rem(g, {j[1]})
      turn = turn + 1
      if not g then
        uturn = turn
      elseif redis.call('EXISTS', lane) == 1 and group_has_room(g) then
        redis.call('ZADD', base .. ':gready', int(turn), g)
      else
        redis.call('ZREM', base .. ':gready', g)
      end
    end
  end
  turn_cache = turn
  redis.call('SET', base .. ':turn', int(turn))
  redis.call('SET', base .. ':uturn', int(uturn))
  return taken
end
-- Claims ready jobs for the worker whose claim arguments start at ARGV[a]: worker id, lease
-- ms, claim token, uniform random in [0, 1), wake channel, concurrency limit, rate limit, rate
-- window ms, and optionally how many jobs at most (default 1) and the queue's keep_completed
-- ms (for the housekeeping's trim; absent or 0: no trim); after housekeeping unless
-- `skip_housekeeping`. Beyond the first, only jobs without a timeout and a deadline are
-- taken (they would wait behind the others): the first such job goes back with its score and
-- ends the batch. Returns {jobs claimed, stalled ids, ms to wait when none (until the next
-- delayed job is due or the rate window ends; -1: nothing known; 0 after a claim that skipped
-- the housekeeping: claim again), then per job {id, payload, attempts, options, timeout ms,
-- score[, a flow's {dependency id, its stored result or false, ...}]}}. `plain`: the caller
-- found neither `:paused` nor `:gready` (jobs_settle.lua), which only a housekeeping run could
-- have changed since, so a claim that skips it need not look again.
local function claim_next(a, now, skip_housekeeping, plain)
  now = now or now_ms()
  local stalled = {}
  if not skip_housekeeping then
    stalled = housekeep(now, tonumber(ARGV[a + 3]), ARGV[a + 4], tonumber(ARGV[a + 9]))
    plain = false
  end
  -- A paused queue hands out nothing (its housekeeping still runs); resume() wakes the
  -- workers, so they wait for that, not for a due time.
  if not plain and redis.call('EXISTS', base .. ':paused') == 1 then return {0, stalled, -1} end
  local want = tonumber(ARGV[a + 8] or '1')
  local concurrency = tonumber(ARGV[a + 5])
  if concurrency > 0 then
    want = math.min(want, concurrency - redis.call('ZCARD', base .. ':active'))
    if want <= 0 then return {0, stalled, -1} end
  end
  local rate = tonumber(ARGV[a + 6])
  local rate_key = base .. ':rate'
  if rate > 0 then
    local used = tonumber(redis.call('GET', rate_key) or '0')
    if used >= rate then return {0, stalled, math.max(1, redis.call('PTTL', rate_key))} end
    want = math.min(want, rate - used)
  end
  local out = {0, stalled, 0}
  local c = {token = ARGV[a + 2], worker = ARGV[a], started = int(now),
             lease = now + tonumber(ARGV[a + 1])}
  local taken = 0
  if not plain and redis.call('EXISTS', base .. ':gready') == 1 then
    -- A worker that batches only by default takes one job while groups take turns: a batch
    -- would hold a small group's job behind the rest of it (jobs_claim.lua, ARGV[11]).
    local grouped_most = tonumber(ARGV[a + 10] or '0')
    if grouped_most and grouped_most > 0 then want = math.min(want, grouped_most) end
    taken = claim_rotation(want, now, c, out)
  else
    local active = {}
    local hashes = {}  -- the claimed jobs' fields, written once they are in :active
    local gone = {}    -- ids leaving :waiting (claimed, or failed past their deadline)
    local seen = 0
    -- Read, then moved: the jobs enter :active (or :failed) before they leave :waiting, so a
    -- failed write leaves them ready (see housekeep()).
    while taken < want do
      local top = redis.call('ZRANGE', base .. ':waiting', seen, seen + want - taken - 1, 'WITHSCORES')
      if #top == 0 then break end
      seen = seen + #top / 2
      local stop = false
      for i = 1, #top, 2 do
        if not stop then
          local h, visible, entry = examine(top[i], top[i + 1], taken, now, c)
          if h == nil then
            stop = true
          else
            gone[#gone + 1] = top[i]
            if h then
              hashes[#hashes + 1] = h
              active[#active + 1] = visible
              active[#active + 1] = active_member(c.token, top[i])
              out[#out + 1] = entry
              taken = taken + 1
            end
          end
        end
      end
      if stop then break end
    end
    if taken > 0 then
      redis.call('ZADD', base .. ':active', unpack(active))
      for _, h in ipairs(hashes) do redis.call('HSET', h[1], unpack(h[2])) end
    end
    if #gone > 0 then redis.call('ZREM', base .. ':waiting', unpack(gone)) end
  end
  if taken > 0 then
    if rate > 0 and redis.call('INCRBY', rate_key, taken) == taken then
      redis.call('PEXPIRE', rate_key, ARGV[a + 7])
    end
    out[1] = taken
    return out
  end
  if skip_housekeeping then return out end
  local nxt = redis.call('ZRANGE', base .. ':delayed', 0, 0, 'WITHSCORES')
  if #nxt == 0 then out[3] = -1 else out[3] = math.max(0, tonumber(nxt[2]) - now) end
  return out
end
