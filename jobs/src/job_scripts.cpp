#include "job_scripts.hpp"

#include <string>

namespace redcoord::detail {

namespace {

// Shared helpers, prepended to each script. Ready jobs sit in `:waiting` scored by
// (max priority - priority) * 2^40 + a sequence number: the highest priority first, FIFO
// within a level. The back-off mirrors backoff_policy::delay() (queue/backoff.hpp) with the
// policy stored in the job (bk: 'f' fixed or 'e' exponential, bb base, bm max, bj jitter).
constexpr const char* prelude = R"lua(
local base = KEYS[1]
local function jk(id) return base .. ':job:' .. id end
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
local function enqueue(id, priority)
  redis.call('ZADD', base .. ':waiting', (9 - priority) * 1099511627776 + next_seq(), id)
end
local function ready(id, priority)
  enqueue(id, priority)
  redis.call('HSET', jk(id), 'state', 'waiting')
end
-- A new job hash from the 10 option values at `o` (payload, priority, max attempts, timeout ms,
-- deadline ms from now, back-off kind, base, max, jitter) due at `due`; ready or delayed.
local function create(id, v, o, due, now)
  local deadline = 0
  if tonumber(v[o + 4]) > 0 then deadline = now + tonumber(v[o + 4]) end
  local state = due > now and 'delayed' or 'waiting'
  redis.call('HSET', jk(id), 'payload', v[o], 'priority', v[o + 1], 'max', v[o + 2],
             'timeout', v[o + 3], 'deadline', deadline, 'attempts', 0, 'added', now,
             'bk', v[o + 5], 'bb', v[o + 6], 'bm', v[o + 7], 'bj', v[o + 8], 'due', due,
             'state', state)
  if state == 'delayed' then
    redis.call('ZADD', base .. ':delayed', due, id)
  else
    enqueue(id, tonumber(v[o + 1]))
  end
  return state
end
local function finish(id, state, reason, now)
  local k = jk(id)
  redis.call('HSET', k, 'state', state, 'finished', now, 'error', reason)
  redis.call('HDEL', k, 'token')
  redis.call('ZADD', base .. ':' .. (state == 'dead' and 'dead' or 'failed'), now, id)
end
local function backoff(k, attempts, u)
  local f = redis.call('HMGET', k, 'bk', 'bb', 'bm', 'bj')
  local d = tonumber(f[2]) or 0
  local max = tonumber(f[3]) or d
  if f[1] == 'e' then
    for _ = 2, attempts do
      if d >= max then break end
      d = math.min(d * 2, max)
    end
  end
  local jitter = tonumber(f[4]) or 0
  if jitter > 0 and d > 0 then d = d - math.floor(d * jitter * u) end
  return d
end
-- A failed attempt: cancelled jobs fail for good, exhausted ones go dead, others wait their
-- back-off (or are ready at once).
local function settle_failure(id, reason, now, u, wake)
  local k = jk(id)
  local f = redis.call('HMGET', k, 'attempts', 'max', 'cancel', 'priority')
  if f[3] == '1' then finish(id, 'failed', 'cancelled', now) return 'failed' end
  if tonumber(f[1]) >= tonumber(f[2]) then finish(id, 'dead', reason, now) return 'dead' end
  redis.call('HSET', k, 'error', reason)
  redis.call('HDEL', k, 'token')
  local d = backoff(k, tonumber(f[1]), u)
  if d > 0 then
    redis.call('HSET', k, 'state', 'delayed')
    redis.call('ZADD', base .. ':delayed', now + d, id)
    redis.call('PUBLISH', wake, 'w')
    return 'delayed'
  end
  ready(id, tonumber(f[4]))
  redis.call('PUBLISH', wake, 'w')
  return 'waiting'
end
-- Promotes due delayed jobs, reclaims stalled ones, then takes the best ready job for the
-- worker whose claim arguments start at ARGV[o]: worker id, lease ms, claim token, uniform
-- random in [0, 1), wake channel, concurrency limit, rate limit, rate window ms.
local function claim_next(o, now)
  now = now or now_ms()
  local u = tonumber(ARGV[o + 3])
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', base .. ':delayed', '-inf', now, 'LIMIT', 0, 100)) do
    redis.call('ZREM', base .. ':delayed', id)
    ready(id, tonumber(redis.call('HGET', jk(id), 'priority')))
  end
  local stalled = redis.call('ZRANGEBYSCORE', base .. ':active', '-inf', now, 'LIMIT', 0, 100)
  for _, id in ipairs(stalled) do
    redis.call('ZREM', base .. ':active', id)
    settle_failure(id, 'stalled: its worker was lost or its timeout passed', now, u, ARGV[o + 4])
  end
  local concurrency = tonumber(ARGV[o + 5])
  if concurrency > 0 and redis.call('ZCARD', base .. ':active') >= concurrency then
    return {0, stalled, -1}
  end
  local rate = tonumber(ARGV[o + 6])
  local rate_key = base .. ':rate'
  if rate > 0 and tonumber(redis.call('GET', rate_key) or '0') >= rate then
    return {0, stalled, math.max(1, redis.call('PTTL', rate_key))}
  end
  while true do
    local top = redis.call('ZPOPMIN', base .. ':waiting')
    if #top == 0 then break end
    local id = top[1]
    local k = jk(id)
    local f = redis.call('HMGET', k, 'payload', 'max', 'timeout', 'deadline', 'priority', 'added', 'due',
                         'attempts')
    local deadline = tonumber(f[4])
    if deadline > 0 and deadline <= now then
      finish(id, 'failed', 'deadline passed before it could run', now)
    else
      local attempts = tonumber(f[8]) + 1
      local visible = now + tonumber(ARGV[o + 1])
      local timeout = tonumber(f[3])
      local ends = 0
      if timeout > 0 then
        ends = now + timeout
        if ends < visible then visible = ends end
      end
      redis.call('HSET', k, 'state', 'active', 'token', ARGV[o + 2], 'worker', ARGV[o],
                 'started', now, 'ends', ends, 'attempts', attempts)
      redis.call('ZADD', base .. ':active', visible, id)
      if rate > 0 and redis.call('INCR', rate_key) == 1 then
        redis.call('PEXPIRE', rate_key, ARGV[o + 7])
      end
      return {1, stalled, id, f[1], attempts, f[2], f[3], f[4], f[5], f[6], f[7]}
    end
  end
  local nxt = redis.call('ZRANGE', base .. ':delayed', 0, 0, 'WITHSCORES')
  if #nxt == 0 then return {0, stalled, -1} end
  return {0, stalled, math.max(0, tonumber(nxt[2]) - now)}
end
)lua";

std::string with_prelude(const char* body) { return std::string(prelude) + body; }

}  // namespace

// ARGV: wake channel, then per job 12 values: id, payload, priority, max attempts, timeout ms,
// delay ms, run-at ms (0: none), deadline ms from now (0: none), back-off kind, base, max,
// jitter. Returns per job {1 | 0 (an earlier job with this id exists), state}.
const script& job_add_script() {
    static const script s(with_prelude(R"lua(
local out = {}
local now = now_ms()
local woke = false
for i = 2, #ARGV, 12 do
  local id = ARGV[i]
  local k = jk(id)
  if redis.call('EXISTS', k) == 1 then
    out[#out + 1] = 0
    out[#out + 1] = redis.call('HGET', k, 'state')
  else
    local due = now + tonumber(ARGV[i + 5])
    if tonumber(ARGV[i + 6]) > 0 then due = tonumber(ARGV[i + 6]) end
    -- create() reads payload, priority, max, timeout, deadline, then the back-off: the add's
    -- layout has delay and run-at between timeout and deadline.
    local v = {ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 7], ARGV[i + 8],
               ARGV[i + 9], ARGV[i + 10], ARGV[i + 11]}
    local state = create(id, v, 1, due, now)
    -- A delayed job too: an idle worker sleeping until a later due time must learn this one.
    woke = true
    out[#out + 1] = 1
    out[#out + 1] = state
  end
end
if woke then redis.call('PUBLISH', ARGV[1], 'w') end
return out
)lua"),
                          cluster_publish::sharded);
    return s;
}

// ARGV: worker id, lease ms, claim token, uniform random in [0, 1) for back-offs, wake channel,
// concurrency limit (0: none), rate limit (0: none), rate window ms.
// Returns {1, stalled ids, id, payload, attempts, max, timeout, deadline, priority, added, due}
// or {0, stalled ids, ms to wait: until the next delayed job is due or the rate window ends,
// -1: nothing known}. Stalled ids: the jobs this call reclaimed (for the stalled events).
const script& job_claim_script() {
    static const script s(with_prelude(R"lua(
return claim_next(1)
)lua"),
                          cluster_publish::sharded);
    return s;
}

// ARGV: id, token, result, result TTL ms (0: not stored), keep ms (how long the completed job
// stays readable and its id deduplicates), events channel, the completed event (enveloped),
// wake channel or '' (publish a wake-up: a concurrency limit may have held workers back), then
// optionally the 8 claim arguments of claim_next() to take the worker's next job in the same
// call. Returns {1 | 0 (the token no longer holds the job), the claim's reply if asked}.
const script& job_complete_script() {
    static const script s(with_prelude(R"lua(
local now = now_ms()
local function complete()
  local k = jk(ARGV[1])
  if redis.call('HGET', k, 'token') ~= ARGV[2] then return 0 end
  redis.call('ZREM', base .. ':active', ARGV[1])
  redis.call('HSET', k, 'state', 'completed', 'finished', now, 'token', '', 'error', '')
  if tonumber(ARGV[4]) > 0 then
    redis.call('SET', base .. ':result:' .. ARGV[1], ARGV[3], 'PX', ARGV[4])
  end
  local keep = tonumber(ARGV[5])
  redis.call('ZADD', base .. ':completed', now, ARGV[1])
  -- The index of completed jobs is trimmed on about one completion in 16 (by the clock's
  -- millisecond): its expired entries cost little, the trim's call on every job does.
  if now % 16 == 0 then
    redis.call('ZREMRANGEBYSCORE', base .. ':completed', '-inf', now - keep)
  end
  redis.call('PEXPIRE', k, keep)
  redis.call('PUBLISH', ARGV[6], ARGV[7])
  if ARGV[8] ~= '' then redis.call('PUBLISH', ARGV[8], 'w') end
  return 1
end
local ok = complete()
if #ARGV >= 9 then return {ok, claim_next(9, now)} end
return {ok}
)lua"),
                          cluster_publish::sharded);
    return s;
}

// ARGV: id, token, reason, uniform random in [0, 1), wake channel, events channel, the failed
// event (enveloped), 1 to publish a wake-up in any case (a concurrency limit), then optionally
// the 8 claim arguments of claim_next(). Returns {the new state, or false when the token no
// longer holds the job; the claim's reply if asked}.
const script& job_fail_script() {
    static const script s(with_prelude(R"lua(
local function fail()
  local k = jk(ARGV[1])
  if redis.call('HGET', k, 'token') ~= ARGV[2] then return false end
  redis.call('ZREM', base .. ':active', ARGV[1])
  local state = settle_failure(ARGV[1], ARGV[3], now_ms(), tonumber(ARGV[4]), ARGV[5])
  redis.call('PUBLISH', ARGV[6], ARGV[7])
  if ARGV[8] == '1' and state ~= 'waiting' and state ~= 'delayed' then
    redis.call('PUBLISH', ARGV[5], 'w')
  end
  return state
end
local state = fail()
if #ARGV >= 9 then return {state, claim_next(9)} end
return {state}
)lua"),
                          cluster_publish::sharded);
    return s;
}

// ARGV: lease ms, then id, token pairs. Extends each held job's visibility to
// min(now + lease, its timeout's end). Returns, per pair, 1 (held), 0 (lost: reclaimed or
// settled elsewhere) or 2 (held, but cancelled: stop it).
const script& job_heartbeat_script() {
    static const script s(with_prelude(R"lua(
local now = now_ms()
local out = {}
for i = 2, #ARGV, 2 do
  local k = jk(ARGV[i])
  local f = redis.call('HMGET', k, 'token', 'ends', 'cancel')
  if f[1] ~= ARGV[i + 1] then
    out[#out + 1] = 0
  else
    local visible = now + tonumber(ARGV[1])
    local ends = tonumber(f[2])
    if ends > 0 and ends < visible then visible = ends end
    redis.call('ZADD', base .. ':active', 'XX', visible, ARGV[i])
    out[#out + 1] = f[3] == '1' and 2 or 1
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
local k = jk(ARGV[1])
if redis.call('HGET', k, 'token') ~= ARGV[2] then return 0 end
redis.call('HSET', k, 'progress', ARGV[3])
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
local now = now_ms()
if state == 'waiting' or state == 'delayed' then
  redis.call('ZREM', base .. ':' .. state, ARGV[1])
  finish(ARGV[1], 'failed', 'cancelled', now)
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
local state = redis.call('HGET', k, 'state')
if state ~= 'dead' and state ~= 'failed' then return 0 end
redis.call('ZREM', base .. ':' .. state, ARGV[1])
redis.call('HSET', k, 'attempts', 0)
redis.call('HDEL', k, 'cancel', 'finished', 'error')
ready(ARGV[1], tonumber(redis.call('HGET', k, 'priority')))
redis.call('PUBLISH', ARGV[2], 'w')
return 1
)lua"),
                          cluster_publish::sharded);
    return s;
}

// ARGV: id. Returns {fields as HGETALL, result or false}.
const script& job_get_script() {
    static const script s(with_prelude(R"lua(
return {redis.call('HGETALL', jk(ARGV[1])), redis.call('GET', base .. ':result:' .. ARGV[1])}
)lua"));
    return s;
}

}  // namespace redcoord::detail

namespace redcoord::detail {

// KEYS[1] base. ARGV: repeat name, payload, priority, max attempts, timeout ms, deadline ms,
// back-off kind, base, max, jitter, every ms (0: cron), cron expression, zone, missed-ticks
// policy ('skip' | 'catch_up'). Registers or replaces the repeat; a new one starts counting
// ticks from now (no backfill), a replaced one keeps its last tick. Returns 1 when new.
const script& job_repeat_set_script() {
    static const script s(with_prelude(R"lua(
local rk = base .. ':repeat:' .. ARGV[1]
local new = redis.call('SADD', base .. ':repeats', ARGV[1])
redis.call('HSET', rk, 'payload', ARGV[2], 'priority', ARGV[3], 'max', ARGV[4], 'timeout', ARGV[5],
           'deadline', ARGV[6], 'bk', ARGV[7], 'bb', ARGV[8], 'bm', ARGV[9], 'bj', ARGV[10],
           'every', ARGV[11], 'cron', ARGV[12], 'tz', ARGV[13], 'missed', ARGV[14])
if redis.call('HEXISTS', rk, 'last') == 0 then redis.call('HSET', rk, 'last', now_ms()) end
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
local v = redis.call('HMGET', rk, 'payload', 'priority', 'max', 'timeout', 'deadline', 'bk', 'bb',
                     'bm', 'bj', 'last')
if not v[1] then return 0 end
local last = tonumber(v[10]) or 0
local now = now_ms()
local added = 0
local woke = false
for i = 5, #ARGV do
  local tick = tonumber(ARGV[i])
  if tick > last then
    local id = 'repeat:' .. ARGV[3] .. ':' .. ARGV[i]
    if redis.call('EXISTS', jk(id)) == 0 then
      if create(id, v, 1, tick, now) == 'waiting' then woke = true end
      added = added + 1
    end
    last = tick
  end
end
redis.call('HSET', rk, 'last', string.format('%d', last))
if woke then redis.call('PUBLISH', ARGV[4], 'w') end
return added
)lua"),
                          cluster_publish::sharded);
    return s;
}

}  // namespace redcoord::detail
