#include "scripts.hpp"

namespace redcoord::detail {

const script& acquire_script() {
    static const script s(R"lua(
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local f = redis.call('INCR', KEYS[2])
  if f == 1 then
    local t = redis.call('TIME')
    f = tonumber(t[1]) * 1000000 + tonumber(t[2])
    redis.call('SET', KEYS[2], string.format('%.0f', f), 'PX', ARGV[2])
  end
  return f
end
local pttl = redis.call('PTTL', KEYS[1])
if not ARGV[3] then return -2 - pttl end
local holder = ''
local v = redis.call('GET', KEYS[1])
if v then
  local n = #v
  if string.byte(v, n) == 42 then n = n - 1
  elseif ARGV[3] == '1' then redis.call('APPEND', KEYS[1], '*') end
  holder = string.sub(redis.sha1hex(string.sub(v, 1, n)), 1, 16)
end
return {0, pttl, holder}
)lua");
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
return 0
)lua");
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
