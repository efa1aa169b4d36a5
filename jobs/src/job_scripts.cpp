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
local function priority_of(o) return tonumber(string.match(o, '^(%d+)')) end
local function enqueue(id, priority)
  redis.call('ZADD', base .. ':waiting', int((9 - priority) * 1099511627776 + next_seq()), id)
end
-- A new job due at `due` (server ms), ready or delayed. Zero timeouts and deadlines are left
-- out of the hash (absent reads as none), as are attempts until the first claim.
local function create(id, payload, o, timeout, deadline, due, now)
  local state = due > now and 'delayed' or 'waiting'
  local f = {'payload', payload, 'o', o, 'added', int(now), 'state', state}
  if timeout ~= '0' then f[#f + 1] = 'timeout' f[#f + 1] = timeout end
  if tonumber(deadline) > 0 then f[#f + 1] = 'deadline' f[#f + 1] = int(now + tonumber(deadline)) end
  redis.call('HSET', jk(id), unpack(f))
  if state == 'delayed' then
    redis.call('ZADD', base .. ':delayed', int(due), id)
  else
    enqueue(id, priority_of(o))
  end
  return state
end
local function finish(id, state, reason, now)
  redis.call('HSET', jk(id), 'state', state, 'finished', int(now), 'error', reason)
  redis.call('ZADD', base .. ':' .. (state == 'dead' and 'dead' or 'failed'), int(now), id)
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
  if attempts >= tonumber(string.match(f[2], '^%d+ (%d+)')) then
    finish(id, 'dead', reason, now)
    return 'dead'
  end
  local d = backoff(f[2], attempts, u)
  local state = d > 0 and 'delayed' or 'waiting'
  redis.call('HSET', k, 'state', state, 'error', reason)
  if d > 0 then
    redis.call('ZADD', base .. ':delayed', int(now + d), id)
  else
    enqueue(id, priority_of(f[2]))
  end
  redis.call('PUBLISH', wake, 'w')
  return state
end
-- Active jobs are members "<claim token>:<id>" of `:active` (tokens are hex), so removing the
-- member is the token check of a settlement.
local function active_member(token, id) return token .. ':' .. id end
local function active_id(member) return string.match(member, '^[^:]*:(.*)$') end
-- Housekeeping: promotes due delayed jobs and reclaims stalled ones (a dead or paused
-- worker's, whose lease lapsed, or a timed-out one's). Returns the reclaimed ids.
local function housekeep(now, u, wake)
  local due = redis.call('ZRANGEBYSCORE', base .. ':delayed', '-inf', int(now), 'LIMIT', 0, 100)
  if #due > 0 then
    redis.call('ZREM', base .. ':delayed', unpack(due))
    for _, id in ipairs(due) do
      local k = jk(id)
      enqueue(id, priority_of(redis.call('HGET', k, 'o')))
      redis.call('HSET', k, 'state', 'waiting')
    end
  end
  local stalled = redis.call('ZRANGEBYSCORE', base .. ':active', '-inf', int(now), 'LIMIT', 0, 100)
  if #stalled == 0 then return stalled end
  redis.call('ZREM', base .. ':active', unpack(stalled))
  for i, m in ipairs(stalled) do
    stalled[i] = active_id(m)
    settle_failure(stalled[i], 'stalled: its worker was lost or its timeout passed', now, u, wake)
  end
  return stalled
end
-- Takes the best ready job for the worker whose claim arguments start at ARGV[a]: worker id,
-- lease ms, claim token, uniform random in [0, 1), wake channel, concurrency limit, rate
-- limit, rate window ms; after housekeeping unless `skip_housekeeping`.
local function claim_next(a, now, skip_housekeeping)
  now = now or now_ms()
  local stalled = {}
  if not skip_housekeeping then stalled = housekeep(now, tonumber(ARGV[a + 3]), ARGV[a + 4]) end
  local concurrency = tonumber(ARGV[a + 5])
  if concurrency > 0 and redis.call('ZCARD', base .. ':active') >= concurrency then
    return {0, stalled, -1}
  end
  local rate = tonumber(ARGV[a + 6])
  local rate_key = base .. ':rate'
  if rate > 0 and tonumber(redis.call('GET', rate_key) or '0') >= rate then
    return {0, stalled, math.max(1, redis.call('PTTL', rate_key))}
  end
  while true do
    local top = redis.call('ZPOPMIN', base .. ':waiting')
    if #top == 0 then break end
    local id = top[1]
    local k = jk(id)
    local f = redis.call('HMGET', k, 'payload', 'o', 'timeout', 'deadline', 'attempts')
    local deadline = tonumber(f[4])
    if deadline and deadline <= now then
      finish(id, 'failed', 'deadline passed before it could run', now)
    else
      local attempts = (tonumber(f[5]) or 0) + 1
      local visible = now + tonumber(ARGV[a + 1])
      local timeout = tonumber(f[3]) or 0
      local h = {'state', 'active', 'worker', ARGV[a], 'started', int(now), 'attempts', int(attempts)}
      if timeout > 0 then
        local ends = now + timeout
        if ends < visible then visible = ends end
        h[#h + 1] = 'ends'
        h[#h + 1] = int(ends)
      end
      redis.call('HSET', k, unpack(h))
      redis.call('ZADD', base .. ':active', int(visible), active_member(ARGV[a + 2], id))
      if rate > 0 and redis.call('INCR', rate_key) == 1 then
        redis.call('PEXPIRE', rate_key, ARGV[a + 7])
      end
      return {1, stalled, id, f[1], attempts, f[2], f[3] or '0'}
    end
  end
  if skip_housekeeping then return {0, stalled, 0} end
  local nxt = redis.call('ZRANGE', base .. ':delayed', 0, 0, 'WITHSCORES')
  if #nxt == 0 then return {0, stalled, -1} end
  return {0, stalled, math.max(0, tonumber(nxt[2]) - now)}
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
for i = 2, #ARGV, 7 do
  local id = ARGV[i]
  local k = jk(id)
  if redis.call('EXISTS', k) == 1 then
    out[#out + 1] = 0
    out[#out + 1] = redis.call('HGET', k, 'state')
  else
    local due = now + tonumber(ARGV[i + 4])
    if ARGV[i + 5] ~= '0' then due = tonumber(ARGV[i + 5]) end
    local state = create(id, ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 6], due, now)
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
// Returns {1, stalled ids, id, payload, attempts, options (the `o` field), timeout ms} or
// {0, stalled ids, ms to wait: until the next delayed job is due or the rate window ends,
// -1: nothing known}. Stalled ids: the jobs this call reclaimed (for the stalled events).
const script& job_claim_script() {
    static const script s(with_prelude(R"lua(
return claim_next(1)
)lua"),
                          cluster_publish::sharded);
    return s;
}

// ARGV: id, token, result, result TTL ms (0: not stored; an empty result is not stored
// either), keep ms (how long the completed job stays readable and its id deduplicates),
// events channel, the completed event (enveloped), wake channel or '' (publish a wake-up: a
// concurrency limit may have held workers back), then optionally '1' to skip housekeeping
// and the 8 claim arguments of claim_next() to take the worker's next job in the same call.
// Returns {1 | 0 (the token no longer holds the job), the claim's reply if asked}; a claim
// that skipped housekeeping and found nothing ready says 0 ms to wait (claim again, fully).
const script& job_complete_script() {
    static const script s(with_prelude(R"lua(
local now = now_ms()
local function complete()
  if redis.call('ZREM', base .. ':active', active_member(ARGV[2], ARGV[1])) == 0 then return 0 end
  local k = jk(ARGV[1])
  local at = int(now)
  redis.call('HSET', k, 'state', 'completed', 'finished', at, 'error', '')
  if ARGV[3] ~= '' and ARGV[4] ~= '0' then
    redis.call('SET', base .. ':result:' .. ARGV[1], ARGV[3], 'PX', ARGV[4])
  end
  redis.call('ZADD', base .. ':completed', at, ARGV[1])
  -- The index of completed jobs is trimmed on about one completion in 16 (by the clock's
  -- millisecond): its expired entries cost little, the trim's call on every job does.
  if now % 16 == 0 then
    redis.call('ZREMRANGEBYSCORE', base .. ':completed', '-inf', int(now - tonumber(ARGV[5])))
  end
  redis.call('PEXPIRE', k, ARGV[5])
  redis.call('PUBLISH', ARGV[6], ARGV[7])
  if ARGV[8] ~= '' then redis.call('PUBLISH', ARGV[8], 'w') end
  return 1
end
local ok = complete()
if #ARGV >= 10 then return {ok, claim_next(10, now, ARGV[9] == '1')} end
return {ok}
)lua"),
                          cluster_publish::sharded);
    return s;
}

// ARGV: id, token, reason, uniform random in [0, 1), wake channel, events channel, the failed
// event (enveloped), 1 to publish a wake-up in any case (a concurrency limit), then optionally
// '1' to skip housekeeping and the 8 claim arguments of claim_next(). Returns {the new state,
// or false when the token no longer holds the job; the claim's reply if asked}.
const script& job_fail_script() {
    static const script s(with_prelude(R"lua(
local now = now_ms()
local function fail()
  if redis.call('ZREM', base .. ':active', active_member(ARGV[2], ARGV[1])) == 0 then
    return false
  end
  local state = settle_failure(ARGV[1], ARGV[3], now, tonumber(ARGV[4]), ARGV[5])
  redis.call('PUBLISH', ARGV[6], ARGV[7])
  if ARGV[8] == '1' and state ~= 'waiting' and state ~= 'delayed' then
    redis.call('PUBLISH', ARGV[5], 'w')
  end
  return state
end
local state = fail()
if #ARGV >= 10 then return {state, claim_next(10, now, ARGV[9] == '1')} end
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
  local m = active_member(ARGV[i + 1], ARGV[i])
  if not redis.call('ZSCORE', base .. ':active', m) then
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
  redis.call('ZREM', base .. ':' .. state, ARGV[1])
  finish(ARGV[1], 'failed', 'cancelled', now_ms())
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
redis.call('ZREM', base .. ':' .. f[1], ARGV[1])
redis.call('HDEL', k, 'attempts', 'cancel', 'finished', 'error')
redis.call('HSET', k, 'state', 'waiting')
enqueue(ARGV[1], priority_of(f[2]))
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
for i = 5, #ARGV do
  local tick = tonumber(ARGV[i])
  if tick > last then
    local id = 'repeat:' .. ARGV[3] .. ':' .. ARGV[i]
    if redis.call('EXISTS', jk(id)) == 0 then
      if create(id, v[1], v[2], v[3], v[4], tick, now) == 'waiting' then woke = true end
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
