#include "scripts.hpp"

namespace redcoord::detail {

const script& acquire_script() {
    static const script s(R"lua(
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {1, redis.call('INCR', KEYS[2])}
end
local holder = redis.call('GET', KEYS[1])
if ARGV[3] == '1' and holder then holder = string.sub(redis.sha1hex(holder), 1, 16) else holder = '' end
return {0, redis.call('PTTL', KEYS[1]), holder}
)lua");
    return s;
}

const script& release_script() {
    static const script s(R"lua(
local floor = tonumber(ARGV[2])
if floor and floor > 0 then
  local cur = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
  if cur < floor then redis.call('SET', KEYS[2], ARGV[2]) end
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  if ARGV[3] ~= '' then redis.call('PUBLISH', ARGV[3], 'released') end
  return 1
end
return 0
)lua");
    return s;
}

const script& extend_script() {
    static const script s(R"lua(
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
)lua");
    return s;
}

}  // namespace redcoord::detail
