#include "scripts.hpp"

#include <string>

namespace redcoord::detail {

const char* const release_notice_lua = R"lua(
local function notify_release(token)
  local nk = KEYS[1] .. ':notice'
  if redis.call('GET', nk) == token then
    redis.call('DEL', nk)
    redis.call('PUBLISH', KEYS[1] .. ':released', 'released')
  end
end
)lua";

namespace {

// Raises the fencing counter KEYS[2] to `floor` (a released token, as text) when it exists
// and stands below it. An absent counter is never created from a floor: a floor can be old
// (a held-back release taken back long after), and a counter created anew starts at the
// server's TIME (next_fence), which exceeds every token of its previous life; raising it to
// an old floor instead gave tokens below ones already handed out.
const char* const raise_fence_lua = R"lua(
local function raise_fence(floor, ttl)
  local f = tonumber(floor)
  if not f or f <= 0 then return end
  local cur = redis.call('GET', KEYS[2])
  if cur and (tonumber(cur) or 0) < f then redis.call('SET', KEYS[2], floor, 'PX', ttl) end
end
)lua";

}  // namespace

const script& acquire_script() {
    static const script s(std::string(next_fence_lua) + release_notice_lua + raise_fence_lua +
                              R"lua(
local fair = ARGV[4]
if fair and ARGV[7] ~= '' then
  -- A held-back release raises the counter as that release would have, on every node this
  -- reaches, whatever comes next (renewal, yield, or someone else's key).
  raise_fence(ARGV[8], ARGV[2])
end
if ARGV[10] == '1' and redis.call('EXISTS', KEYS[1] .. ':gone:' .. ARGV[1]) == 1 then
  -- Released before it arrived (a Redlock round decided without waiting for this node):
  -- take nothing, and let go of a held-back holding as that release would have.
  if fair and ARGV[7] ~= '' and redis.call('GET', KEYS[1]) == ARGV[7] then
    redis.call('DEL', KEYS[1])
    notify_release(ARGV[7])
  end
  if ARGV[3] == '-' then return -1 end
  return {0, -1, '', 0, 0}
end
local owner, left, yielding = false, 0, false
if fair then
  owner = redis.call('GET', KEYS[3])
  if owner == fair then
    left = redis.call('PTTL', KEYS[3])
    if left <= tonumber(ARGV[6]) then
      local w = redis.call('GET', KEYS[4])
      yielding = w and w ~= fair
    end
  end
end
local took = false
if fair and ARGV[7] ~= '' then
  if redis.call('GET', KEYS[1]) == ARGV[7] then
    if yielding then
      redis.call('DEL', KEYS[1])
      notify_release(ARGV[7])
    else
      redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
      -- A waiter that asked for the previous holding's release notice waits for this one.
      local nk = KEYS[1] .. ':notice'
      if redis.call('GET', nk) == ARGV[7] then redis.call('SET', nk, ARGV[1], 'PX', ARGV[2]) end
      took = true
    end
  elseif ARGV[10] == '1' then
    -- The previous holding is not here: an attempt of its own may still be in flight to this
    -- node on another connection (a Redlock round decides at a majority) and would bring it
    -- back after its release; this tombstone makes that attempt take nothing.
    redis.call('SET', KEYS[1] .. ':gone:' .. ARGV[7], '1', 'PX', ARGV[2])
  end
end
if not took and not yielding then took = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) end
if took then
  local f = next_fence(ARGV[2])
  if fair then
    if owner ~= fair or left <= tonumber(ARGV[6]) then
      redis.call('SET', KEYS[3], fair, 'PX', tonumber(ARGV[5]) + tonumber(ARGV[6]))
    end
    if ARGV[9] == '1' and redis.call('GET', KEYS[4]) == fair then redis.call('DEL', KEYS[4]) end
  end
  return f
end
local pttl = redis.call('PTTL', KEYS[1])
if pttl ~= -2 then yielding = false end
local turn = 0
if fair and not yielding then
  if owner and owner ~= fair then
    turn = math.max(0, redis.call('PTTL', KEYS[3]) - tonumber(ARGV[6]))
  end
  if ARGV[3] ~= '-' then redis.call('SET', KEYS[4], fair, 'PX', turn + tonumber(ARGV[6])) end
end
if ARGV[3] == '-' or not ARGV[3] then
  if yielding then return -3 end
  return -2 - pttl
end
local holder = ''
local v = redis.call('GET', KEYS[1])
if v then
  holder = string.sub(redis.sha1hex(v), 1, 16)
  if ARGV[3] == '1' then
    -- Ask for this holding's release notice in a key of our own, never in the holder's value:
    -- a holder of another client (SET NX PX, compare-and-delete) must find its value intact.
    local nk = KEYS[1] .. ':notice'
    if redis.call('GET', nk) ~= v then
      local left = pttl
      if left <= 0 then left = tonumber(ARGV[2]) end
      redis.call('SET', nk, v, 'PX', left)
    end
  end
end
return {0, pttl, holder, turn, yielding and 1 or 0}
)lua",
                          cluster_publish::sharded);
    return s;
}

const script& release_script() {
    static const script s(std::string(release_notice_lua) + raise_fence_lua + R"lua(
if KEYS[2] then raise_fence(ARGV[2], ARGV[3]) end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  notify_release(ARGV[1])
  return 1
end
if ARGV[4] then redis.call('SET', KEYS[1] .. ':gone:' .. ARGV[1], '1', 'PX', ARGV[4]) end
return 0
)lua",
                          cluster_publish::sharded);
    return s;
}

const script& extend_script() {
    static const script s(R"lua(
if redis.call('GET', KEYS[1]) == ARGV[1] then
  local nk = KEYS[1] .. ':notice'
  if redis.call('GET', nk) == ARGV[1] then redis.call('PEXPIRE', nk, ARGV[2]) end
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
)lua");
    return s;
}

}  // namespace redcoord::detail
