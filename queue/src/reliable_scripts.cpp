#include "reliable_scripts.hpp"

#include <string>

namespace redcoord::detail {
namespace {

// Shared helpers. The envelope layout is the one in envelope.hpp: magic (4) | id (16) |
// attempts (u32 BE, bytes 21..24 in Lua's 1-based indexing) | enqueued ms (u64 BE) | payload
// length (u32 BE, bytes 33..36) | check (bytes 37..40: the first 4 bytes of SHA-1 over bytes
// 1..20 and 33..36) | payload. is_env must agree with decode_envelope byte for byte, or a raw
// payload that starts with the magic would be rewritten.
const char* const prelude = R"lua(
local MAGIC = '\0RQ\1'
local HDR = 40
local function be(n, bytes)
  local t = {}
  for i = bytes, 1, -1 do t[i] = n % 256; n = math.floor(n / 256) end
  return string.char(unpack(t))
end
local function u32(m, at)
  local a, b, c, d = string.byte(m, at, at + 3)
  return ((a * 256 + b) * 256 + c) * 256 + d
end
local function check(covered)
  local x = redis.sha1hex(covered)
  return string.char(tonumber(string.sub(x, 1, 2), 16), tonumber(string.sub(x, 3, 4), 16),
                     tonumber(string.sub(x, 5, 6), 16), tonumber(string.sub(x, 7, 8), 16))
end
local function is_env(m)
  if #m < HDR or string.sub(m, 1, 4) ~= MAGIC then return false end
  if u32(m, 33) ~= #m - HDR then return false end
  return string.sub(m, 37, 40) == check(string.sub(m, 1, 20) .. string.sub(m, 33, 36))
end
-- The element with attempts + 1 (a raw payload gets an envelope: id = nonce .. idx) and the
-- new count.
local function bump(m, nonce, idx, now)
  if is_env(m) then
    local n = u32(m, 21)
    if n < 4294967295 then n = n + 1 end
    return string.sub(m, 1, 20) .. be(n, 4) .. string.sub(m, 25), n
  end
  local head, len = MAGIC .. nonce .. be(idx, 8), be(#m, 4)
  return head .. be(1, 4) .. now .. len .. check(head .. len) .. m, 1
end
-- Returns 1 when the message went to the dead-letter list.
local function place(m, n, max, ready, dead, front)
  if n >= max then redis.call('LPUSH', dead, m) return 1 end
  if front then redis.call('RPUSH', ready, m) else redis.call('LPUSH', ready, m) end
  return 0
end
-- Moves a whole processing list back to the front of the queue, oldest message first in
-- line (LRANGE runs newest to oldest; each RPUSH goes in front of the previous one).
local function reclaim(pkey, ready, dead, max, nonce, now, idx)
  local items = redis.call('LRANGE', pkey, 0, -1)
  local req, dl = 0, 0
  for i = 1, #items do
    idx = idx + 1
    local m, n = bump(items[i], nonce, idx, now)
    if place(m, n, max, ready, dead, true) == 1 then dl = dl + 1 else req = req + 1 end
  end
  redis.call('DEL', pkey)
  return req, dl, idx
end
)lua";

std::string with_prelude(const char* body) { return std::string(prelude) + body; }

}  // namespace

// KEYS: consumers, heartbeat, ready, processing. ARGV: consumer id, ttl ms.
// Renews the lease, then moves: the move happens while the consumer is registered.
const script& queue_pop_script() {
    static const script s(R"lua(
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], '1', 'PX', ARGV[2])
return redis.call('LMOVE', KEYS[3], KEYS[4], 'RIGHT', 'LEFT')
)lua");
    return s;
}

// KEYS: consumers, heartbeat. ARGV: consumer id, ttl ms. Returns {1 if the consumer was not
// in the set, 1 if the heartbeat key existed}: a renewal that finds either missing while the
// local lease bound said it must be there tells the client its bound is not to be trusted.
const script& queue_register_script() {
    static const script s(R"lua(
local added = redis.call('SADD', KEYS[1], ARGV[1])
local had = redis.call('EXISTS', KEYS[2])
redis.call('SET', KEYS[2], '1', 'PX', ARGV[2])
return {added, had}
)lua");
    return s;
}

// KEYS: processing, ready, dead. ARGV: element, 'requeue'|'dead', max attempts, nonce (8
// bytes), now (8 bytes). Returns 0 (not ours), 1 (requeued), 2 (dead-lettered).
// The message is pushed before it leaves the processing list: Redis keeps the writes a script
// made before an error, so a push that fails (WRONGTYPE, ...) after the removal would lose it.
// This way a failed nack leaves it in flight, for a retry or for recovery.
const script& queue_nack_script() {
    static const script s(with_prelude(R"lua(
if not redis.call('LPOS', KEYS[1], ARGV[1]) then return 0 end
local m, n = bump(ARGV[1], ARGV[4], 1, ARGV[5])
local r = 2
if ARGV[2] == 'dead' then
  redis.call('LPUSH', KEYS[3], m)
elseif place(m, n, tonumber(ARGV[3]), KEYS[2], KEYS[3], false) == 0 then
  r = 1
end
redis.call('LREM', KEYS[1], 1, ARGV[1])
return r
)lua"));
    return s;
}

// KEYS: consumers, ready, dead. ARGV: processing key prefix, heartbeat key prefix, max
// attempts, nonce, now. Returns {requeued, dead-lettered, consumers removed}.
const script& queue_recover_script() {
    static const script s(with_prelude(R"lua(
local max = tonumber(ARGV[3])
local req, dl, gone, idx = 0, 0, 0, 0
local members = redis.call('SMEMBERS', KEYS[1])
for _, c in ipairs(members) do
  if redis.call('EXISTS', ARGV[2] .. c) == 0 then
    local r, d
    r, d, idx = reclaim(ARGV[1] .. c, KEYS[2], KEYS[3], max, ARGV[4], ARGV[5], idx)
    req = req + r
    dl = dl + d
    gone = gone + 1
    redis.call('SREM', KEYS[1], c)
  end
end
return {req, dl, gone}
)lua"));
    return s;
}

// KEYS: consumers, ready, dead, processing, heartbeat. ARGV: consumer id, max attempts,
// nonce, now. Returns {requeued, dead-lettered}.
const script& queue_release_script() {
    static const script s(with_prelude(R"lua(
local r, d = reclaim(KEYS[4], KEYS[2], KEYS[3], tonumber(ARGV[2]), ARGV[3], ARGV[4], 0)
redis.call('DEL', KEYS[5])
redis.call('SREM', KEYS[1], ARGV[1])
return {r, d}
)lua"));
    return s;
}

// KEYS: consumers, processing, heartbeat. ARGV: consumer id. Unregisters the consumer only
// while its processing list is empty. Returns 1 when it did.
const script& queue_retire_idle_script() {
    static const script s(R"lua(
if redis.call('LLEN', KEYS[2]) > 0 then return 0 end
redis.call('DEL', KEYS[3])
redis.call('SREM', KEYS[1], ARGV[1])
return 1
)lua");
    return s;
}

// KEYS: dead, ready. ARGV: limit (0: all). Oldest dead letter first; attempts reset to 0.
// Each letter is pushed to the queue before it is popped from the dead list, so a push that
// fails leaves it dead instead of nowhere (as in the nack script).
const script& queue_requeue_dead_script() {
    static const script s(with_prelude(R"lua(
local limit = tonumber(ARGV[1])
local n = 0
while limit == 0 or n < limit do
  local m = redis.call('LINDEX', KEYS[1], -1)
  if not m then break end
  if is_env(m) then m = string.sub(m, 1, 20) .. be(0, 4) .. string.sub(m, 25) end
  redis.call('LPUSH', KEYS[2], m)
  redis.call('RPOP', KEYS[1])
  n = n + 1
end
return n
)lua"));
    return s;
}

// KEYS: consumers, ready, dead. ARGV: processing prefix, heartbeat prefix.
// Returns {ready, dead, consumer, in-flight, alive, consumer, ...}.
const script& queue_stats_script() {
    static const script s(R"lua(
local out = {redis.call('LLEN', KEYS[2]), redis.call('LLEN', KEYS[3])}
for _, c in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  out[#out + 1] = c
  out[#out + 1] = redis.call('LLEN', ARGV[1] .. c)
  out[#out + 1] = redis.call('EXISTS', ARGV[2] .. c)
end
return out
)lua");
    return s;
}

}  // namespace redcoord::detail
