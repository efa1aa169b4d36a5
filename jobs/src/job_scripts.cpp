#include "job_scripts.hpp"

#include <string>

namespace redcoord::detail {

namespace {

// Shared helpers, prepended to each script. Ready jobs sit in `:waiting` scored by
// (max priority - priority) * 2^40 + a sequence number: the highest priority first, FIFO
// within a level. The back-off mirrors backoff_policy::delay() (jobs/backoff.hpp) with the
// policy stored in the job's options field.
constexpr const char* prelude = R"lua(
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
)lua";

std::string with_prelude(const char* body) { return std::string(prelude) + body; }

}  // namespace

// ARGV: wake channel, then per job 7 values: id, payload, options (the `o` field), timeout
// ms, delay ms, run-at ms (0: none), deadline ms from now (0: none). Returns per job
// {1 | 0 (an earlier job with this id exists), state}.
const script& job_add_script() {
    static const script s(with_prelude(R"lua(
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
)lua"),
                          cluster_publish::sharded);
    return s;
}

// Pauses (ARGV[1] '1') or resumes (ARGV[1] '0') the queue: `:paused` exists while paused;
// resuming publishes on the wake channel ARGV[2] so idle workers claim at once. Returns 1 when
// the state changed, 0 when it already was so.
const script& job_pause_script() {
    static const script s(with_prelude(R"lua(
if ARGV[1] == '1' then
  return redis.call('SET', base .. ':paused', '1', 'NX') and 1 or 0
end
if redis.call('DEL', base .. ':paused') == 0 then return 0 end
redis.call('PUBLISH', ARGV[2], 'w')
return 1
)lua"),
                          cluster_publish::sharded);
    return s;
}

// ARGV: the claim arguments of claim_next(): worker id, lease ms, claim token, uniform random
// in [0, 1) for back-offs, wake channel, concurrency limit (0: none), rate limit (0: none),
// rate window ms, and optionally how many jobs at most (default 1) and keep_completed ms.
// Returns claim_next()'s reply; its stalled ids are the jobs this call reclaimed (for the
// stalled events).
const script& job_claim_script() {
    static const script s(with_prelude(R"lua(
return claim_next(1)
)lua"),
                          cluster_publish::sharded);
    return s;
}

// Settles a worker's finished jobs and, optionally, claims its next ones, in one call.
// ARGV: result TTL ms (0: results are not stored; empty ones never are), keep ms (how long a
// completed job stays readable and its id deduplicates), events channel, wake channel, '1'
// when the queue has a concurrency limit (a settlement frees a slot: wake the workers), the
// number of settlements S, then S times 6 values: kind ('c' completed, 'f' failed, 'r'
// released: claimed but not started, back to waiting with its attempt undone), id, claim
// token, text (the result or the failure's reason), the event (enveloped; '' for 'r'), score
// for 'r' (its place in `:waiting` when claimed) or a uniform random in [0, 1) for 'f'; then
// optionally '1' to skip the housekeeping and the claim arguments of claim_next().
// Returns {per settlement: 'c' 1 | 0 (the token no longer holds the job), 'f' the new state or
// false, 'r' 1 | 0; then the claim's reply if asked}.
const script& job_settle_script() {
    static const script s(with_prelude(R"lua(
local now = now_ms()
local at = int(now)
local result_ttl, keep, events, wake = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local results = {}
local completed = {}
local freed = false
local released = false
local n = tonumber(ARGV[6])
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
    if kind == 'c' then
      redis.call('HSET', k, 'state', 'completed', 'finished', at, 'error', '')
      if ARGV[i + 3] ~= '' and result_ttl ~= '0' then
        redis.call('SET', base .. ':result:' .. id, ARGV[i + 3], 'PX', result_ttl)
      end
      redis.call('PEXPIRE', k, keep)
      redis.call('PUBLISH', events, ARGV[i + 4])
      r = 1
    elseif kind == 'f' then
      r = settle_failure(id, ARGV[i + 3], now, tonumber(ARGV[i + 5]), wake)
      redis.call('PUBLISH', events, ARGV[i + 4])
    else
      local attempts = tonumber(redis.call('HGET', k, 'attempts')) or 1
      redis.call('ZADD', base .. ':waiting', ARGV[i + 5], id)
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
if #ARGV > c then return {results, claim_next(c + 1, now, ARGV[c] == '1')} end
return {results}
)lua"),
                          cluster_publish::sharded);
    return s;
}

// ARGV: lease ms, then id, token pairs. Extends each held job's visibility to
// min(now + lease, its timeout's end). Returns, per pair, 1 (held), 0 (lost: reclaimed,
// settled elsewhere, or its lease lapsed) or 2 (held, but cancelled: stop it).
// A lapsed lease is the next claim's to take back, not renewed: its worker has fired the
// job's stop token by then, and a heartbeat that waited out a pause in a socket's buffer
// would otherwise make the job its own again for another lease.
const script& job_heartbeat_script() {
    static const script s(with_prelude(R"lua(
local now = now_ms()
local out = {}
for i = 2, #ARGV, 2 do
  local m = active_member(ARGV[i + 1], ARGV[i])
  local held = tonumber(redis.call('ZSCORE', base .. ':active', m))
  if not held or held <= now then
    out[#out + 1] = 0
  else
    local f = redis.call('HMGET', jk(ARGV[i]), 'ends', 'cancel')
    local visible = now + tonumber(ARGV[1])
    local ends = tonumber(f[1]) or 0
    if ends > 0 and ends < visible then visible = ends end
    redis.call('ZADD', base .. ':active', 'XX', int(visible), m)
    out[#out + 1] = f[2] == '1' and 2 or 1
  end
end
return out
)lua"));
    return s;
}

// ARGV: id, token, progress, events channel, the progress event (enveloped). Returns 1, or 0
// when the token no longer holds the job.
const script& job_progress_script() {
    static const script s(with_prelude(R"lua(
if not redis.call('ZSCORE', base .. ':active', active_member(ARGV[2], ARGV[1])) then return 0 end
redis.call('HSET', jk(ARGV[1]), 'progress', ARGV[3])
redis.call('PUBLISH', ARGV[4], ARGV[5])
return 1
)lua"),
                          cluster_publish::sharded);
    return s;
}

// ARGV: id, cancel channel. Returns the state the job was in ('waiting' and 'delayed' are now
// failed; 'active' is flagged and announced on the channel), or false for no such job.
const script& job_cancel_script() {
    static const script s(with_prelude(R"lua(
local k = jk(ARGV[1])
local state = redis.call('HGET', k, 'state')
if not state then return false end
if state == 'waiting' or state == 'delayed' then
  -- Into :failed before out of its index (see housekeep()).
  finish(ARGV[1], 'failed', 'cancelled', now_ms())
  redis.call('ZREM', base .. ':' .. state, ARGV[1])
elseif state == 'active' then
  redis.call('HSET', k, 'cancel', '1')
  redis.call('PUBLISH', ARGV[2], ARGV[1])
end
return state
)lua"),
                          cluster_publish::sharded);
    return s;
}

// ARGV: id, wake channel. A dead or failed job is made ready again with its attempts reset.
// Returns 1, or 0 when the job is in another state (or gone).
const script& job_retry_script() {
    static const script s(with_prelude(R"lua(
local k = jk(ARGV[1])
local f = redis.call('HMGET', k, 'state', 'o')
if f[1] ~= 'dead' and f[1] ~= 'failed' then return 0 end
-- Into :waiting before out of its index (see housekeep()).
enqueue(ARGV[1], priority_of(f[2]))
redis.call('ZREM', base .. ':' .. f[1], ARGV[1])
redis.call('HDEL', k, 'attempts', 'cancel', 'finished', 'error')
redis.call('HSET', k, 'state', 'waiting')
redis.call('PUBLISH', ARGV[2], 'w')
return 1
)lua"),
                          cluster_publish::sharded);
    return s;
}

// ARGV: id. Returns {fields as HGETALL, result or false}.
const script& job_get_script() {
    static const script s(with_prelude(R"lua(
return {redis.call('HGETALL', jk(ARGV[1])), redis.call('GET', base .. ':result:' .. ARGV[1]),
        redis.call('ZSCORE', base .. ':delayed', ARGV[1])}
)lua"));
    return s;
}

// ARGV: id. Deletes the job and its result unless it is active. Returns the state it was in
// ('active': nothing deleted), or false for no such job.
const script& job_remove_script() {
    static const script s(with_prelude(R"lua(
local k = jk(ARGV[1])
local state = redis.call('HGET', k, 'state')
if not state or state == 'active' then return state end
redis.call('ZREM', base .. ':' .. state, ARGV[1])
redis.call('DEL', k, base .. ':result:' .. ARGV[1])
return state
)lua"));
    return s;
}

// ARGV: state ('completed' | 'failed' | 'dead'), age ms, at most how many (<= 1000). Deletes
// the jobs of that state that finished at least `age` ago (their index score), oldest first,
// with their results. Returns how many.
const script& job_clean_script() {
    static const script s(with_prelude(R"lua(
local index = base .. ':' .. ARGV[1]
local ids = redis.call('ZRANGEBYSCORE', index, '-inf', int(now_ms() - tonumber(ARGV[2])),
                       'LIMIT', 0, tonumber(ARGV[3]))
if #ids == 0 then return 0 end
local keys = {}
for _, id in ipairs(ids) do
  keys[#keys + 1] = jk(id)
  keys[#keys + 1] = base .. ':result:' .. id
end
redis.call('DEL', unpack(keys))
redis.call('ZREM', index, unpack(ids))
return #ids
)lua"));
    return s;
}

}  // namespace redcoord::detail

namespace redcoord::detail {

// KEYS[1] base. ARGV: repeat name, payload, options (the jobs' `o` field), timeout ms,
// deadline ms, every ms (0: cron), cron expression, zone, missed-ticks policy ('skip' |
// 'catch_up'). Registers or replaces the repeat; a new one starts counting ticks from now (no
// backfill), a replaced one keeps its last tick. Returns 1 when new.
const script& job_repeat_set_script() {
    static const script s(with_prelude(R"lua(
local rk = base .. ':repeat:' .. ARGV[1]
local new = redis.call('SADD', base .. ':repeats', ARGV[1])
redis.call('HSET', rk, 'payload', ARGV[2], 'o', ARGV[3], 'timeout', ARGV[4], 'deadline', ARGV[5],
           'every', ARGV[6], 'cron', ARGV[7], 'tz', ARGV[8], 'missed', ARGV[9])
if redis.call('HEXISTS', rk, 'last') == 0 then redis.call('HSET', rk, 'last', int(now_ms())) end
return new
)lua"));
    return s;
}

// KEYS[1] base. ARGV: repeat name. Returns 1 when it existed.
const script& job_repeat_remove_script() {
    static const script s(with_prelude(R"lua(
redis.call('DEL', base .. ':repeat:' .. ARGV[1])
return redis.call('SREM', base .. ':repeats', ARGV[1])
)lua"));
    return s;
}

// KEYS[1] base. Returns {server now ms, {name, every, cron, zone, missed, last}...}.
const script& job_repeat_list_script() {
    static const script s(with_prelude(R"lua(
local out = {}
for _, name in ipairs(redis.call('SMEMBERS', base .. ':repeats')) do
  local f = redis.call('HMGET', base .. ':repeat:' .. name, 'every', 'cron', 'tz', 'missed', 'last')
  if f[1] then out[#out + 1] = {name, f[1], f[2], f[3], f[4], f[5]} end
end
return {now_ms(), out}
)lua"));
    return s;
}

// KEYS[1] base, KEYS[2] the election's selector hash (same hash tag). ARGV: identity, epoch,
// repeat name, wake channel, then tick times (ms, ascending). Fenced: refused unless the
// caller holds the election under that epoch. Adds job `repeat:<name>:<tick>` for each tick
// after the repeat's last one and moves the last tick on. Returns the number added.
const script& job_tick_script() {
    static const script s(with_prelude(R"lua(
local f = redis.call('HMGET', KEYS[2], 'holder', 'epoch')
if f[1] ~= ARGV[1] or f[2] ~= ARGV[2] then
  return redis.error_reply('FENCED the scheduler is not the leader under epoch ' .. ARGV[2])
end
local rk = base .. ':repeat:' .. ARGV[3]
local v = redis.call('HMGET', rk, 'payload', 'o', 'timeout', 'deadline', 'last')
if not v[1] then return 0 end
local last = tonumber(v[5]) or 0
local now = now_ms()
local added = 0
local woke = false
local acc = {waiting = {}, delayed = {}}
for i = 5, #ARGV do
  local tick = tonumber(ARGV[i])
  if tick > last then
    local id = 'repeat:' .. ARGV[3] .. ':' .. ARGV[i]
    if redis.call('EXISTS', jk(id)) == 0 then
      if create(id, v[1], v[2], v[3], v[4], tick, now, acc) == 'waiting' then woke = true end
      added = added + 1
    end
    last = tick
  end
end
add_indexed(acc)
redis.call('HSET', rk, 'last', int(last))
if woke then redis.call('PUBLISH', ARGV[4], 'w') end
return added
)lua"),
                          cluster_publish::sharded);
    return s;
}

}  // namespace redcoord::detail
