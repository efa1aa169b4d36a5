#include "scripts.hpp"

#include <string>

namespace redcoord::detail {

const char* const next_fence_lua = R"lua(
local function next_fence(ttl)
  local f = redis.call('INCR', KEYS[2])
  if f == 1 then
    local t = redis.call('TIME')
    f = tonumber(t[1]) * 1000000 + tonumber(t[2])
    redis.call('SET', KEYS[2], string.format('%.0f', f), 'PX', ttl)
  end
  return f
end
)lua";

const script& acquire_script() {
    static const script s(std::string(next_fence_lua) + R"lua(
local fair = ARGV[4]
if fair and ARGV[7] ~= '' then
  -- A held-back release raises the counter as that release would have, on every node this
  -- reaches, whatever comes next (renewal, yield, or someone else's key).
  local floor = tonumber(ARGV[8])
  if floor and floor > 0 and (tonumber(redis.call('GET', KEYS[2]) or '0') or 0) < floor then
    redis.call('SET', KEYS[2], ARGV[8], 'PX', ARGV[2])
  end
end
if ARGV[10] == '1' and redis.call('EXISTS', KEYS[1] .. ':gone:' .. ARGV[1]) == 1 then
  -- Released before it arrived (a Redlock round decided without waiting for this node):
  -- take nothing, and let go of a held-back holding as that release would have.
  local v = redis.call('GET', KEYS[1])
  if fair and ARGV[7] ~= '' and (v == ARGV[7] or v == ARGV[7] .. '*') then
    redis.call('DEL', KEYS[1])
    if v ~= ARGV[7] then redis.call('PUBLISH', KEYS[1] .. ':released', 'released') end
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
local mark = ''
local took = false
if fair and ARGV[7] ~= '' then
  local v = redis.call('GET', KEYS[1])
  if v == ARGV[7] or v == ARGV[7] .. '*' then
    if v ~= ARGV[7] then mark = '*' end
    if yielding then
      redis.call('DEL', KEYS[1])
      if mark ~= '' then redis.call('PUBLISH', KEYS[1] .. ':released', 'released') end
    else
      redis.call('SET', KEYS[1], ARGV[1] .. mark, 'PX', ARGV[2])
      took = true
    end
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
  local n = #v
  if string.byte(v, n) == 42 then n = n - 1
  elseif ARGV[3] == '1' then redis.call('APPEND', KEYS[1], '*') end
  holder = string.sub(redis.sha1hex(string.sub(v, 1, n)), 1, 16)
end
return {0, pttl, holder, turn, yielding and 1 or 0}
)lua",
                          cluster_publish::sharded);
    return s;
}

const script& release_script() {
    static const script s(R"lua(
if KEYS[2] then
  local floor = tonumber(ARGV[2])
  if floor and floor > 0 then
    local cur = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
    if cur < floor then redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3]) end
  end
end
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
if v == ARGV[1] .. '*' then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', KEYS[1] .. ':released', 'released')
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
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] or v == ARGV[1] .. '*' then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
)lua");
    return s;
}

}  // namespace redcoord::detail
