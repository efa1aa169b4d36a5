-- Fragment, prepended to every jobs_*.lua script but jobs_inspect (by the build, and by a
-- producer in another language: docs/jobs-wire.md). Defines the helpers they share.
-- KEYS[1]  the queue's base key `<prefix>jobs:{<name>}`: every other key of the queue is built
--          from it here (`:job:<id>`, `:waiting`, `:delayed`, `:active`, `:completed`,
--          `:failed`, `:dead`, `:result:<id>`, `:seq`, `:paused`, `:rate`, `:repeats`,
--          `:repeat:<name>`) and shares its hash tag, so its Cluster slot.
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
local function enqueue(id, priority)
  redis.call('ZADD', base .. ':waiting', int((9 - priority) * 1099511627776 + next_seq()), id)
end
-- A new job due at `due` (server ms), ready or delayed. Zero timeouts and deadlines are left
-- out of the hash (absent reads as none), as are attempts until the first claim. The index
-- entries go to `acc` ({waiting = {score, id, ...}, delayed = {...}}): add_indexed() writes
-- each index with one ZADD for a whole batch.
local function create(id, payload, o, timeout, deadline, due, now, acc)
  local state = due > now and 'delayed' or 'waiting'
  local f = {'payload', payload, 'o', o, 'added', int(now), 'state', state}
  if timeout ~= '0' then f[#f + 1] = 'timeout' f[#f + 1] = timeout end
  if tonumber(deadline) > 0 then f[#f + 1] = 'deadline' f[#f + 1] = int(now + tonumber(deadline)) end
  redis.call('HSET', jk(id), unpack(f))
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
-- Index first, then the hash's state: a failed ZADD leaves the job as it was (housekeep()).
local function finish(id, state, reason, now)
  redis.call('ZADD', base .. ':' .. (state == 'dead' and 'dead' or 'failed'), int(now), id)
  redis.call('HSET', jk(id), 'state', state, 'finished', int(now), 'error', reason)
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
  local f = redis.call('HMGET', k, 'attempts', 'o', 'cancel')
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
    enqueue(id, priority_of(f[2]))
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
      enqueue(id, priority_of(redis.call('HGET', k, 'o')))
      redis.call('HSET', k, 'state', 'waiting')
    end
    redis.call('ZREM', base .. ':delayed', unpack(due))
  end
  local members = redis.call('ZRANGEBYSCORE', base .. ':active', '-inf', int(now), 'LIMIT', 0, 100)
  local stalled = {}
  if #members == 0 then return stalled end
  for i, m in ipairs(members) do
    stalled[i] = active_id(m)
    settle_failure(stalled[i], 'stalled: its worker was lost or its timeout passed', now, u, wake)
  end
  redis.call('ZREM', base .. ':active', unpack(members))
  return stalled
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
-- score}}.
local function claim_next(a, now, skip_housekeeping)
  now = now or now_ms()
  local stalled = {}
  if not skip_housekeeping then
    stalled = housekeep(now, tonumber(ARGV[a + 3]), ARGV[a + 4], tonumber(ARGV[a + 9]))
  end
  -- A paused queue hands out nothing (its housekeeping still runs); resume() wakes the
  -- workers, so they wait for that, not for a due time.
  if redis.call('EXISTS', base .. ':paused') == 1 then return {0, stalled, -1} end
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
  local active = {}
  local hashes = {}  -- the claimed jobs' fields, written once they are in :active
  local gone = {}    -- ids leaving :waiting (claimed, or failed past their deadline)
  local token, worker, started = ARGV[a + 2], ARGV[a], int(now)
  local lease = now + tonumber(ARGV[a + 1])
  local taken = 0
  local seen = 0
  -- Read, then moved: the jobs enter :active (or :failed) before they leave :waiting, so a
  -- failed write leaves them ready (see housekeep()).
  while taken < want do
    local top = redis.call('ZRANGE', base .. ':waiting', seen, seen + want - taken - 1, 'WITHSCORES')
    if #top == 0 then break end
    seen = seen + #top / 2
    local stop = false
    for i = 1, #top, 2 do
      local id = top[i]
      if not stop then
        local k = jk(id)
        local f = redis.call('HMGET', k, 'payload', 'o', 'timeout', 'deadline', 'attempts')
        local deadline = tonumber(f[4])
        if taken > 0 and (f[3] or f[4]) then
          stop = true
        elseif deadline and deadline <= now then
          finish(id, 'failed', 'deadline passed before it could run', now)
          gone[#gone + 1] = id
        else
          local attempts = (tonumber(f[5]) or 0) + 1
          local visible = lease
          local timeout = tonumber(f[3]) or 0
          local h = {'state', 'active', 'worker', worker, 'started', started, 'attempts', int(attempts)}
          if timeout > 0 then
            local ends = now + timeout
            if ends < visible then visible = ends end
            h[#h + 1] = 'ends'
            h[#h + 1] = int(ends)
          end
          hashes[#hashes + 1] = {k, h}
          active[#active + 1] = int(visible)
          active[#active + 1] = active_member(token, id)
          gone[#gone + 1] = id
          out[#out + 1] = {id, f[1], attempts, f[2], f[3] or '0', top[i + 1]}
          taken = taken + 1
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
